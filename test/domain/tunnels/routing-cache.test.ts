import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RoutingCache, type RemoteRoute, type RemoteRouteSource, type RouteChanges } from '../../../src/domain/tunnels/routing-cache.js';

/** A database of routes whose notifications the test sends (or drops, as a lost connection would). */
class FakeSource implements RemoteRouteSource {
  routes: RemoteRoute[] = [];
  reads = 0;
  notify: () => void = () => {};
  async tunnelsElsewhere(instanceId: string): Promise<RemoteRoute[]> {
    this.reads++;
    return this.routes.filter((route) => route.instanceId !== instanceId);
  }
  async watch(onChange: () => void): Promise<() => Promise<void>> {
    this.notify = onChange;
    return async () => {
      this.notify = () => {};
    };
  }
}

function route(id: string, over: Partial<RemoteRoute> = {}): RemoteRoute {
  return { tunnelId: id, sessionId: 'ts_1', accountId: 'acc', instanceId: 'inst_a', clusterAddr: '127.0.1.1:7000', proto: 'http', url: `http://${id}.example`, labels: null, endpointId: `ep_${id}`, poolingEnabled: false, version: 'v1', ...over };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

function cacheOf(source: FakeSource, options: { checkIntervalMs?: number; refuse?: Set<string> } = {}) {
  const changes: RouteChanges[] = [];
  const errors: unknown[] = [];
  const cache = new RoutingCache(
    source,
    'inst_b',
    async (change) => {
      changes.push(change);
      return change.added.filter((each) => options.refuse?.has(each.tunnelId)).map((each) => each.tunnelId);
    },
    (error) => errors.push(error),
    options.checkIntervalMs ?? 60_000,
  );
  return { cache, changes, errors };
}

describe('the routing cache of other instances\' tunnels', () => {
  it('reads every route at start, then applies what a notification reveals: added, removed, changed', async () => {
    const source = new FakeSource();
    source.routes = [route('one'), route('mine', { instanceId: 'inst_b' })];
    const { cache, changes } = cacheOf(source);
    await cache.start();
    assert.deepEqual(changes.map((c) => c.added.map((r) => r.tunnelId)), [['one']]);
    source.routes = [route('one', { version: 'v2' }), route('two')];
    source.notify();
    await settle();
    assert.deepEqual(changes[1]!.removed.map((r) => r.tunnelId), ['one']);
    assert.deepEqual(changes[1]!.added.map((r) => r.tunnelId).sort(), ['one', 'two']);
    source.routes = [route('two')];
    source.notify();
    await settle();
    assert.deepEqual(changes[2]!.removed.map((r) => r.tunnelId), ['one']);
    assert.equal(changes[2]!.added.length, 0);
    assert.equal(cache.size, 1);
    await cache.stop();
  });

  it('finds a change whose notification was missed at the next periodic check', async () => {
    const source = new FakeSource();
    const { cache, changes } = cacheOf(source, { checkIntervalMs: 50 });
    await cache.start();
    assert.equal(changes.length, 0);
    source.routes = [route('late')]; // no notify(): the notification was lost
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.deepEqual(changes.map((c) => c.added.map((r) => r.tunnelId)), [['late']]);
    await cache.stop();
  });

  it('notifications arriving during a refresh make one more refresh, not one each', async () => {
    const source = new FakeSource();
    const { cache } = cacheOf(source);
    await cache.start();
    const before = source.reads;
    for (let i = 0; i < 10; i++) source.notify();
    await settle();
    assert.ok(source.reads - before <= 2, `${source.reads - before} reads for 10 notifications`);
    await cache.stop();
  });

  it('a route that could not be taken (holder unreachable, tunnel not served yet) is offered again soon, backing off', async () => {
    const source = new FakeSource();
    source.routes = [route('far')];
    const refuse = new Set(['far']);
    const { cache, changes } = cacheOf(source, { refuse });
    await cache.start();
    // retried soon, with no notification and long before the periodic check; twice refused here
    await new Promise((resolve) => setTimeout(resolve, 150));
    refuse.clear();
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.deepEqual(changes.map((c) => c.added.map((r) => r.tunnelId)), [['far'], ['far'], ['far']]);
    assert.equal(changes[2]!.removed.length, 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(changes.length, 3, 'taken: no more retries');
    await cache.stop();
  });

  it('a failed read is reported and changes nothing; with no way to listen the periodic check still runs', async () => {
    const source = new FakeSource();
    source.watch = () => Promise.reject(new Error('no LISTEN here'));
    const failing = source.tunnelsElsewhere.bind(source);
    let fail = true;
    source.tunnelsElsewhere = (id) => (fail ? Promise.reject(new Error('database down')) : failing(id));
    source.routes = [route('one')];
    const { cache, changes, errors } = cacheOf(source, { checkIntervalMs: 50 });
    await cache.start();
    assert.deepEqual(errors.map((e) => (e as Error).message), ['no LISTEN here', 'database down']);
    assert.equal(changes.length, 0);
    fail = false;
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.deepEqual(changes.map((c) => c.added.map((r) => r.tunnelId)), [['one']]);
    await cache.stop();
  });
});
