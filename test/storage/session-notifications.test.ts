// @test-pass postgres
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/storage/db.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { clusterSkipReason, migratedSchemaPair, waitedFor } from '../helpers/cluster-db.js';

/**
 * Revocation and session commands across instances (CLUSTER.md §3) on real PostgreSQL: migration
 * 022's triggers wake the instances of the same schema only, each on its channel, and a command
 * queued or a credential deleted through one instance reaches the others at once.
 */
const skip = await clusterSkipReason('session-notifications storage suite');

describe('session notifications in PostgreSQL', { skip }, () => {
  const schemas = migratedSchemaPair('sn');

  async function watching(s: Store, what: 'commands' | 'credentials'): Promise<{ count: () => number; stop: () => Promise<void> }> {
    let count = 0;
    const stop = await new SqlTunnelRepository(s).watch!(what, () => count++);
    schemas.stops.push(stop);
    return { count: () => count, stop };
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

  it('a queued command wakes the command watchers of its schema at once, not those of another schema nor the credential watchers', async () => {
    const mine = await watching(schemas.store, 'commands');
    const theirs = await watching(schemas.other, 'commands');
    const credentials = await watching(schemas.store, 'credentials');
    await new SqlTunnelRepository(schemas.store).enqueueCommand('inst_a', 'ts_1', 'stop', Date.now());
    const elapsed = await waitedFor(() => mine.count() > 0, 1_000);
    console.log(`# command notified after ${elapsed} ms`);
    assert.equal(mine.count(), 1);
    assert.ok(elapsed < 250, `${elapsed} ms: no faster than the poll`);
    await settle();
    assert.equal(theirs.count(), 0);
    assert.equal(credentials.count(), 0);
    assert.deepEqual(await new SqlTunnelRepository(schemas.store).takeCommands('inst_a'), [{ sessionId: 'ts_1', command: 'stop' }]);
    await settle();
    assert.equal(mine.count(), 1, 'taking the commands notifies nobody');
  });

  it('a credential deleted, or its account revoked, wakes the credential watchers of its schema only', async () => {
    const mine = await watching(schemas.store, 'credentials');
    const theirs = await watching(schemas.other, 'credentials');
    await sql`insert into accounts (id, name, created_at) values ('ac_1', 'one', '2026-01-01T00:00:00Z')`.execute(schemas.store.db);
    await sql`insert into credentials (id, account_id, owner_id, token_hash, created_at) values ('cr_1', 'ac_1', 'ac_1', 'h', '2026-01-01T00:00:00Z')`.execute(schemas.store.db);
    await settle();
    assert.equal(mine.count(), 0, 'a new credential revokes nothing');
    await sql`delete from credentials where id = 'cr_1'`.execute(schemas.store.db);
    const elapsed = await waitedFor(() => mine.count() > 0, 1_000);
    console.log(`# credential deletion notified after ${elapsed} ms`);
    assert.equal(mine.count(), 1);
    await sql`update accounts set revoked_at = '2026-01-02T00:00:00Z' where id = 'ac_1'`.execute(schemas.store.db);
    await waitedFor(() => mine.count() > 1, 1_000);
    assert.equal(mine.count(), 2, 'an account revoked notifies too');
    await settle();
    assert.equal(theirs.count(), 0);
  });

  it('a watcher stopped is called no more; the others of the connection keep listening', async () => {
    const commands = await watching(schemas.store, 'commands');
    const credentials = await watching(schemas.store, 'credentials');
    await commands.stop();
    await new SqlTunnelRepository(schemas.store).enqueueCommand('inst_a', 'ts_2', 'restart', Date.now());
    await sql`update credentials set acl = '[]'`.execute(schemas.store.db);
    await waitedFor(() => credentials.count() > 0, 1_000);
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
