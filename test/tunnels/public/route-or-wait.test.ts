// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EdgeRoute as StoredEdge } from '../../../src/domain/edges/types.js';
import { MovingNames, namesServing } from '../../../src/domain/tunnels/moving-names.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EdgeRouting } from '../../../src/tunnels/edges/edge-routing.js';
import { RouteWaits } from '../../../src/domain/tunnels/route-waits.js';
import { NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';
import { ProxyOpener } from '../../../src/tunnels/public/opener.js';
import { backendOrWait, routeOrWait } from '../../../src/tunnels/public/route-or-wait.js';
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
    const route = (host: string) => routeOrWait(registry.waits, opener, () => routes.poolFor(host), (moving) => moving.mayMove(namesServing(host).map((name) => routes.urlOf(name))));
    return { registry, routes, route, opener };
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
    const waited = routeOrWait(registry.waits, opener, () => routes.poolFor('new.example'), (moving) => moving.mayMove([routes.urlOf('new.example')]));
    assert.ok(waited instanceof Promise);
    assert.equal(await waited, undefined);
  });

  /** TLS edges of acct_1 (their backends' labels by hostport host) routed by the real EdgeRouting over `registry`. */
  function edgesOver(registry: TunnelRegistry, backends: Record<string, Record<string, string>>) {
    const stored = (host: string): StoredEdge | undefined =>
      backends[host] && { edgeId: `edgtls_${host}`, accountId: 'acct_1', hostport: `${host}:443`, backend: { enabled: true, labels: backends[host]! }, policy: null, tlsTermination: null } as StoredEdge;
    return new EdgeRouting({ findEdgeByHost: async (host) => stored(host) }, registry, 25, createLogger('silent'), 443);
  }

  const labeled = (id: string, labels: Record<string, string>, remote: boolean): LiveTunnel => ({ ...tunnel('', id, remote), proto: '', url: null, labels });

  it("a TLS edge whose backend's labeled tunnel was withdrawn waits, and is served once a tunnel it matches appears; another edge's does not wait", async () => {
    const { registry, opener } = instance(60_000);
    const edges = edgesOver(registry, { 'moving.example': { app: 'web' }, 'other.example': { app: 'api' } });
    registry.addLabeled(labeled('tn_old', { app: 'web', zone: 'eu' }, true));
    const moving = (await edges.resolveEdge('moving.example'))!;
    assert.equal(backendOrWait(registry.waits, opener, moving), true, 'served at once while its tunnel is there');
    registry.removeLabeled('tn_old');
    const waited = backendOrWait(registry.waits, opener, moving);
    assert.ok(waited instanceof Promise);
    assert.equal(backendOrWait(registry.waits, opener, (await edges.resolveEdge('other.example'))!), false, 'answered at once');
    assert.equal(registry.waits.waiting, 1);
    registry.addLabeled(labeled('tn_new', { app: 'web', zone: 'us' }, true));
    registry.routesChanged();
    assert.equal(await waited, true);
    assert.equal(moving.backend.pick()?.id, 'tn_new', 'the route resolved before the wait picks the new tunnel');
  });

  it('a TLS edge whose backend matches no tunnel and none withdrawn is answered at once; one whose agent is going away waits, then gives up', async () => {
    const { registry, opener } = instance();
    const edges = edgesOver(registry, { 'edge.example': { app: 'web' } });
    const edge = (await edges.resolveEdge('edge.example'))!;
    assert.equal(backendOrWait(registry.waits, opener, edge), false);
    // this instance's agent is gone (its connection unknown to the opener): the tunnel cannot take it
    registry.addLabeled(labeled('tn_local', { app: 'web' }, false));
    const started = Date.now();
    const waited = backendOrWait(registry.waits, opener, edge);
    assert.ok(waited instanceof Promise);
    assert.equal(await waited, true, 'the backend still has its tunnel: the connection meets no_tunnel');
    assert.ok(Date.now() - started >= 90);
  });

  it('a single instance never waits', () => {
    const registry = new TunnelRegistry();
    const routes = new SchemeRoutes(registry, 'http', undefined);
    assert.equal(routeOrWait(undefined, new ProxyOpener({ connectionOf: () => undefined }), () => routes.poolFor('x.example'), () => true), undefined);
  });
});
