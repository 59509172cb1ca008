import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { clusterSchema, clusterSkipReason } from '../helpers/cluster-db.js';

/**
 * Revocation and session commands across instances (CLUSTER.md §3) on real PostgreSQL: migration
 * 022's triggers wake the instances of the same schema only, each on its channel, and a command
 * queued or a credential deleted through one instance reaches the others at once.
 */
const skip = await clusterSkipReason('session-notifications storage suite');

describe('session notifications in PostgreSQL', { skip }, () => {
  const one = clusterSchema('sn1');
  const two = clusterSchema('sn2');
  let store: Store;
  let other: Store;
  const stops: (() => Promise<void>)[] = [];

  before(async () => {
    store = openStore(one.url);
    other = openStore(two.url);
    await migrateToLatest(store);
    await migrateToLatest(other);
  });
  after(async () => {
    for (const stop of stops) await stop();
    await store.close();
    await other.close();
    await one.drop();
    await two.drop();
  });

  async function watching(s: Store, what: 'commands' | 'credentials'): Promise<{ count: () => number; stop: () => Promise<void> }> {
    let count = 0;
    const stop = await new SqlTunnelRepository(s).watch!(what, () => count++);
    stops.push(stop);
    return { count: () => count, stop };
  }

  /** Waits for `check`; resolves with the time it took. */
  async function until(check: () => boolean, ms: number): Promise<number> {
    const started = performance.now();
    while (!check() && performance.now() - started < ms) await new Promise((resolve) => setTimeout(resolve, 2));
    return Math.round(performance.now() - started);
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

  it('a queued command wakes the command watchers of its schema at once, not those of another schema nor the credential watchers', async () => {
    const mine = await watching(store, 'commands');
    const theirs = await watching(other, 'commands');
    const credentials = await watching(store, 'credentials');
    await new SqlTunnelRepository(store).enqueueCommand('inst_a', 'ts_1', 'stop', Date.now());
    const elapsed = await until(() => mine.count() > 0, 1_000);
    console.log(`# command notified after ${elapsed} ms`);
    assert.equal(mine.count(), 1);
    assert.ok(elapsed < 250, `${elapsed} ms: no faster than the poll`);
    await settle();
    assert.equal(theirs.count(), 0);
    assert.equal(credentials.count(), 0);
    assert.deepEqual(await new SqlTunnelRepository(store).takeCommands('inst_a'), [{ sessionId: 'ts_1', command: 'stop' }]);
    await settle();
    assert.equal(mine.count(), 1, 'taking the commands notifies nobody');
  });

  it('a credential deleted, or its account revoked, wakes the credential watchers of its schema only', async () => {
    const mine = await watching(store, 'credentials');
    const theirs = await watching(other, 'credentials');
    await sql`insert into accounts (id, name, created_at) values ('ac_1', 'one', '2026-01-01T00:00:00Z')`.execute(store.db);
    await sql`insert into credentials (id, account_id, owner_id, token_hash, created_at) values ('cr_1', 'ac_1', 'ac_1', 'h', '2026-01-01T00:00:00Z')`.execute(store.db);
    await settle();
    assert.equal(mine.count(), 0, 'a new credential revokes nothing');
    await sql`delete from credentials where id = 'cr_1'`.execute(store.db);
    const elapsed = await until(() => mine.count() > 0, 1_000);
    console.log(`# credential deletion notified after ${elapsed} ms`);
    assert.equal(mine.count(), 1);
    await sql`update accounts set revoked_at = '2026-01-02T00:00:00Z' where id = 'ac_1'`.execute(store.db);
    await until(() => mine.count() > 1, 1_000);
    assert.equal(mine.count(), 2, 'an account revoked notifies too');
    await settle();
    assert.equal(theirs.count(), 0);
  });

  it('a watcher stopped is called no more; the others of the connection keep listening', async () => {
    const commands = await watching(store, 'commands');
    const credentials = await watching(store, 'credentials');
    await commands.stop();
    await new SqlTunnelRepository(store).enqueueCommand('inst_a', 'ts_2', 'restart', Date.now());
    await sql`update credentials set acl = '[]'`.execute(store.db);
    await until(() => credentials.count() > 0, 1_000);
    assert.equal(credentials.count(), 1);
    await settle();
    assert.equal(commands.count(), 0, 'stopped: called no more');
  });

  it('SQLite (one instance) has nothing to watch', () => {
    const sqlite = openStore('sqlite::memory:');
    assert.equal(new SqlTunnelRepository(sqlite).watch, undefined);
    void sqlite.close();
  });
});
