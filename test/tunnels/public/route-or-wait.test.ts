// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MovingNames, namesServing } from '../../../src/domain/tunnels/moving-names.js';
import { RouteWaits } from '../../../src/domain/tunnels/route-waits.js';
import { NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';
import { ProxyOpener } from '../../../src/tunnels/public/opener.js';
import { routeOrWait } from '../../../src/tunnels/public/route-or-wait.js';
import { EndpointPool, SchemeRoutes, TunnelRegistry, type LiveTunnel } from '../../../src/tunnels/registry.js';

/**
 * CLUSTER.md §3 through the routing table: its withdrawals (a local endpoint's last tunnel gone,
 * another instance's route removed) are what make a name wait; a name never routed does not.
 */
describe('routeOrWait on a cluster instance', () => {
  /** An instance past its start-up window; waits of `waitMs`. */
  function instance(waitMs = 100) {
    let later = 0;
    const moving = new MovingNames({ windowMs: 15_000, now: () => Date.now() + later });
    later = 15_000;
    const registry = new TunnelRegistry(new RouteWaits(waitMs, 1_000, moving));
    const routes = new SchemeRoutes(registry, 'http', undefined);
    // another instance's tunnels can always be opened; this instance's agents are all gone
    const opener = new ProxyOpener({ connectionOf: () => undefined }, 500, { open: () => undefined });
    const route = (host: string) => routeOrWait(registry.waits, opener, () => routes.poolFor(host), () => namesServing(host).map((name) => routes.urlOf(name)));
    return { registry, routes, route };
  }

  const tunnel = (url: string, id: string, remote: boolean): LiveTunnel => ({
    id, sessionId: `ts_${id}`, accountId: 'acct_1', proto: 'http', url, labels: null, proxyProto: 0, policy: NO_POLICY,
    ...(remote ? { remote: { instanceId: 'in_other', clusterAddr: '127.0.1.9:7000' } } : {}),
  });

  function remotePool(registry: TunnelRegistry, url: string, id: string): EndpointPool {
    const pool = new EndpointPool(url, `ep_${id}`, false);
    pool.tunnels.push(tunnel(url, id, true));
    registry.addRemotePool(pool);
    return pool;
  }

  it('a name never routed gets its answer at once (no promise, nothing waiting)', () => {
    const { registry, route } = instance();
    assert.equal(route('nobody.example'), undefined);
    assert.equal(registry.waits.waiting, 0);
  });

  it('a name whose route another instance withdrew waits, and is served once it appears again', async () => {
    const { registry, route } = instance(60_000);
    remotePool(registry, 'http://app.example', 'tn_1');
    registry.removeRemote('http://app.example', 'tn_1');
    const waited = route('app.example');
    assert.ok(waited instanceof Promise);
    assert.equal(registry.waits.waiting, 1);
    const moved = remotePool(registry, 'http://app.example', 'tn_2');
    registry.routesChanged();
    assert.equal(await waited, moved);
  });

  it('a name whose local endpoint lost its last tunnel waits, then gets its 404 when nothing comes', async () => {
    const { registry, route } = instance();
    const pool = new EndpointPool('http://local.example', 'ep_local', false);
    pool.tunnels.push(tunnel(pool.url, 'tn_local', false));
    registry.addPool(pool);
    registry.removeFromPool(pool.url, 'tn_local');
    const started = Date.now();
    const waited = route('local.example');
    assert.ok(waited instanceof Promise);
    assert.equal(await waited, undefined);
    assert.ok(Date.now() - started >= 90);
  });

  it('a name under a withdrawn wildcard endpoint waits; one under no wildcard does not', async () => {
    const { registry, route } = instance();
    remotePool(registry, 'http://*.example.com', 'tn_wild');
    registry.removeRemote('http://*.example.com', 'tn_wild');
    const waited = route('a.b.example.com');
    assert.ok(waited instanceof Promise);
    assert.equal(route('a.example.org'), undefined);
    assert.equal(await waited, undefined);
  });

  it('an endpoint still routed whose agents cannot take the connection waits (its agent going away), then is answered 502', async () => {
    const { registry, route } = instance();
    const pool = new EndpointPool('http://draining.example', 'ep_draining', false);
    pool.tunnels.push(tunnel(pool.url, 'tn_draining', false));
    registry.addPool(pool);
    const waited = route('draining.example');
    assert.ok(waited instanceof Promise);
    assert.equal(await waited, pool);
  });

  it('in its first moments an instance waits for every name: its routing could not see earlier withdrawals', async () => {
    const registry = new TunnelRegistry(new RouteWaits(100, 1_000, new MovingNames({ windowMs: 15_000 })));
    const routes = new SchemeRoutes(registry, 'http', undefined);
    const opener = new ProxyOpener({ connectionOf: () => undefined });
    const waited = routeOrWait(registry.waits, opener, () => routes.poolFor('new.example'), () => [routes.urlOf('new.example')]);
    assert.ok(waited instanceof Promise);
    assert.equal(await waited, undefined);
  });

  it('a single instance never waits', () => {
    const registry = new TunnelRegistry();
    const routes = new SchemeRoutes(registry, 'http', undefined);
    assert.equal(routeOrWait(undefined, new ProxyOpener({ connectionOf: () => undefined }), () => routes.poolFor('x.example'), () => ['http://x.example']), undefined);
  });
});
