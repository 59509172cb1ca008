// @test-pass sqlite
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileBindPolicy, NO_POLICY, type ConnectionPolicy } from '../../src/domain/tunnels/connection-policy.js';
import type { AgentConnection } from '../../src/tunnels/protocol/index.js';
import { ProxyOpener } from '../../src/tunnels/public/opener.js';
import { EndpointPool, onlyTunnel, TunnelRegistry, type LiveTunnel } from '../../src/tunnels/registry.js';

/** A pool's tunnels may run different policies: the tunnel is picked first, then its policy runs (docs/DECISIONS.md). */
const url = 'http://pool.burrow.localhost';
const answer = (body: string) => compileBindPolicy(JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 200, body } }] }] }), null, 25, 'http');
const denyLoopback = () => compileBindPolicy(JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { deny: ['127.0.0.0/8'] } }] }] }), null, 25, 'http');

function tunnel(id: string, policy: ConnectionPolicy = NO_POLICY, remote = false): LiveTunnel {
  return { id, sessionId: `ts_${id}`, accountId: 'acct_1', proto: 'http', url, labels: null, proxyProto: 0, policy, ...(remote ? { remote: { instanceId: 'inst_b', clusterAddr: '127.0.1.2:1' } } : {}) };
}

test('the mix follows every change of the pool: a tunnel added, patched, replaced or gone, a partner linked', () => {
  const pool = new EndpointPool(url, 'ep_1', true);
  const a = tunnel('tn_a', answer('A'));
  pool.add(a);
  assert.equal(pool.mix, 'same');
  pool.add(tunnel('tn_b', answer('A')));
  assert.equal(pool.mix, 'same', 'two binds of one policy');
  pool.setPolicy(a, answer('B'));
  assert.equal(pool.mix, 'per-request');
  pool.setPolicy(a, denyLoopback());
  assert.equal(pool.mix, 'per-connection');
  pool.remove('tn_b');
  assert.equal(pool.mix, 'same', 'one tunnel left');
  const b = tunnel('tn_b', answer('A'));
  pool.add(b);
  assert.ok(pool.replace(a, tunnel('tn_a', answer('A'))));
  assert.equal(pool.mix, 'same');
  assert.equal(pool.replace(a, b), false, 'a tunnel no longer there');
  // another instance's tunnels of the URL join the picks, and the comparison
  const registry = new TunnelRegistry();
  const remote = new EndpointPool(url, 'ep_1', true);
  remote.add(tunnel('tn_r', answer('R'), true));
  registry.addPool(pool);
  registry.addRemotePool(remote);
  assert.equal(pool.partner, remote);
  assert.equal(pool.mix, 'per-request');
  remote.setPolicy(remote.tunnels[0]!, answer('A'));
  assert.equal(pool.mix, 'same', 'the partner’s change is seen too');
  registry.removeRemote(url, 'tn_r');
  assert.equal(pool.partner, undefined);
});

test('the mix is compared once per change, not per connection', () => {
  const pool = new EndpointPool(url, 'ep_1', true);
  let reads = 0;
  const counted = (policy: ConnectionPolicy): LiveTunnel => {
    const each = tunnel(`tn_${reads}`);
    Object.defineProperty(each, 'policy', { get: () => (reads++, policy), enumerable: true });
    return each;
  };
  pool.add(counted(answer('A')));
  pool.add(counted(answer('B')));
  for (let i = 0; i < 100; i++) assert.equal(pool.mix, 'per-request');
  assert.equal(reads, 2);
});

test('pickFirst: nothing for a pool of one policy; else round-robin over the tunnels that can take a stream', () => {
  const ok = { closed: false, draining: false, authenticated: true, proxyStreamsOpen: 0 };
  const connections: Record<string, typeof ok> = { ts_tn_a: ok, ts_tn_b: ok, ts_tn_c: { ...ok, closed: true } };
  const opener = new ProxyOpener({ connectionOf: (id) => connections[id] as unknown as AgentConnection });
  const pool = new EndpointPool(url, 'ep_1', true);
  pool.add(tunnel('tn_a', answer('A')));
  pool.add(tunnel('tn_b', answer('A')));
  assert.equal(opener.pickFirst(pool), undefined, 'the tunnel is picked when the stream opens, as ever');
  pool.add(tunnel('tn_c', answer('C')));
  const picks = Array.from({ length: 6 }, () => opener.pickFirst(pool)?.id);
  assert.deepEqual(picks.sort(), ['tn_a', 'tn_a', 'tn_a', 'tn_b', 'tn_b', 'tn_b'], 'the closed agent’s tunnel is skipped');
  connections.ts_tn_a = connections.ts_tn_b = { ...ok, closed: true };
  assert.ok(opener.pickFirst(pool), 'none usable: one is still picked (its policy runs, its stream fails)');
  // a tunnel picked first is the only one its stream may open to
  const first = pool.tunnels[0]!;
  const only = onlyTunnel(first);
  assert.deepEqual([only.candidates, only.pick(), only.pick()], [[first], first, first]);
});
