// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EndpointPool, TunnelRegistry, type LiveTunnel } from '../../../src/tunnels/registry.js';
import { NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';

/** CLUSTER.md §2: a pooled URL served here and elsewhere round-robins over every tunnel of it. */
describe('a pooled URL served by this instance and another', () => {
  const url = 'http://pool.burrow.localhost';
  const tunnel = (id: string, remote = false): LiveTunnel => ({
    id,
    sessionId: `ts_${id}`,
    accountId: 'acct_1',
    proto: 'http',
    url,
    labels: null,
    proxyProto: 0,
    policy: NO_POLICY,
    ...(remote ? { remote: { instanceId: 'inst_b', clusterAddr: '127.0.1.2:1' } } : {}),
  });

  function served(pooling: { local: boolean; remote: boolean }) {
    const registry = new TunnelRegistry();
    const local = new EndpointPool(url, 'ep_1', pooling.local);
    local.tunnels.push(tunnel('tn_a1'), tunnel('tn_a2'));
    const remote = new EndpointPool(url, 'ep_1', pooling.remote);
    remote.tunnels.push(tunnel('tn_b1', true));
    registry.addPool(local);
    registry.addRemotePool(remote);
    return { registry, local, remote };
  }

  const picks = (pool: EndpointPool, count: number) => Array.from({ length: count }, () => pool.pick()?.id);

  it('routes to the local pool, whose picks go round-robin over its tunnels and the other instance’s', () => {
    const { registry, local } = served({ local: true, remote: true });
    assert.equal(registry.route(url), local, 'the same object: rate limits and breakers keyed by it stay');
    assert.deepEqual(picks(local, 6).sort(), ['tn_a1', 'tn_a1', 'tn_a2', 'tn_a2', 'tn_b1', 'tn_b1']);
    assert.deepEqual(local.candidates.map((each) => each.id), ['tn_a1', 'tn_a2', 'tn_b1']);
  });

  it('without pooling on either side, no partner: only the local tunnels, and no new array', () => {
    for (const pooling of [{ local: true, remote: false }, { local: false, remote: true }]) {
      const { local } = served(pooling);
      assert.equal(local.partner, undefined);
      assert.equal(local.candidates, local.tunnels);
      assert.deepEqual(new Set(picks(local, 4)), new Set(['tn_a1', 'tn_a2']));
    }
  });

  it('the other instance’s last tunnel leaving, or its pool arriving after the local one, keeps the link right', () => {
    const registry = new TunnelRegistry();
    const local = new EndpointPool(url, 'ep_1', true);
    local.tunnels.push(tunnel('tn_a1'));
    registry.addPool(local);
    const remote = new EndpointPool(url, 'ep_1', true);
    remote.tunnels.push(tunnel('tn_b1', true));
    registry.addRemotePool(remote);
    assert.equal(local.partner, remote);
    registry.removeRemote(url, 'tn_b1');
    assert.equal(local.partner, undefined);
    assert.deepEqual(picks(local, 2), ['tn_a1', 'tn_a1']);
  });

  it('a remote pool arriving first is partnered when the local one opens', () => {
    const registry = new TunnelRegistry();
    const remote = new EndpointPool(url, 'ep_1', true);
    remote.tunnels.push(tunnel('tn_b1', true));
    registry.addRemotePool(remote);
    const local = new EndpointPool(url, 'ep_1', true);
    local.tunnels.push(tunnel('tn_a1'));
    registry.addPool(local);
    assert.equal(local.partner, remote);
    local.remove('tn_a1');
    registry.removeIfEmpty(url);
    assert.equal(registry.route(url), remote);
    assert.equal(local.partner, undefined);
  });

  it('while draining, routes to the other instance’s pool, which does not span the local one', () => {
    const { registry, remote } = served({ local: true, remote: true });
    registry.draining = true;
    assert.equal(registry.route(url), remote);
    assert.deepEqual(picks(remote, 3), ['tn_b1', 'tn_b1', 'tn_b1']);
  });
});
