// @test-pass postgres
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { Store } from '../../src/storage/db.js';
import { SqlRemoteRouteSource } from '../../src/storage/repositories/remote-routes.js';
import { clusterSkipReason, migratedSchemaPair, waitedFor } from '../helpers/cluster-db.js';

/**
 * The routing cache's storage (CLUSTER.md §2) on real PostgreSQL: migration 018's triggers
 * notify a bind or unbind to the instances of the same schema only, and the read lists the other
 * instances' tunnels that can be reached.
 */
const skip = await clusterSkipReason('remote-routes storage suite');

describe('remote routes in PostgreSQL', { skip }, () => {
  const schemas = migratedSchemaPair('rr');

  const instance = (s: Store, id: string, addr: string | null) =>
    sql`insert into instances (id, started_at, last_seen_at, cluster_addr) values (${id}, '2026-01-01T00:00:00Z', 0, ${addr})`.execute(s.db);
  const tunnel = (s: Store, id: string, instanceId: string, url: string | null, labels: string | null = null) =>
    sql`insert into tunnels (id, account_id, session_id, instance_id, proto, public_url, labels, forwards_to, metadata, endpoint_id, started_at)
        values (${id}, 'acc_1', 'ts_1', ${instanceId}, ${url ? 'http' : ''}, ${url}, ${labels}, 'x', '', null, '2026-01-01T00:00:00Z')`.execute(s.db);

  async function watching(s: Store): Promise<{ count: () => number }> {
    let count = 0;
    schemas.stops.push(await new SqlRemoteRouteSource(s).watch(() => count++));
    return { count: () => count };
  }

  it('a tunnel written wakes the watchers of its schema within 1 s, not those of another schema', async () => {
    const mine = await watching(schemas.store);
    const theirs = await watching(schemas.other);
    await instance(schemas.store, 'inst_a', '127.0.1.1:7000');
    await tunnel(schemas.store, 'tn_1', 'inst_a', 'http://one.example');
    const elapsed = await waitedFor(() => mine.count() > 0, 1_000);
    assert.ok(mine.count() > 0, 'notified');
    assert.ok(elapsed < 1_000, `${elapsed} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(theirs.count(), 0);
    const before = mine.count();
    await sql`delete from tunnels where id = 'tn_1'`.execute(schemas.store.db);
    await waitedFor(() => mine.count() > before, 1_000);
    assert.ok(mine.count() > before, 'an unbind notifies too');
  });

  it('lists the tunnels of other instances with a cluster address, never its own', async () => {
    await instance(schemas.store, 'inst_b', '127.0.1.2:7000');
    await instance(schemas.store, 'inst_c', null);
    await tunnel(schemas.store, 'tn_a', 'inst_a', 'http://a.example');
    await tunnel(schemas.store, 'tn_l', 'inst_a', null, '{"app":"web"}');
    await tunnel(schemas.store, 'tn_b', 'inst_b', 'http://b.example');
    await tunnel(schemas.store, 'tn_c', 'inst_c', 'http://c.example');
    const routes = await new SqlRemoteRouteSource(schemas.store).tunnelsElsewhere('inst_b');
    assert.deepEqual(routes.map((route) => route.tunnelId), ['tn_a', 'tn_l']);
    assert.equal(routes[0]!.clusterAddr, '127.0.1.1:7000');
    assert.deepEqual(routes[1]!.labels, { app: 'web' });
    assert.equal(routes[1]!.url, null);
  });
});
