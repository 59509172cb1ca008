import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Flag, FrameType } from '../../src/tunnels/muxado/index.js';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { RawAgent } from '../helpers/raw-agent.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

const BIND = 1;
const START_TUNNEL_WITH_LABEL = 7;
const PATCH_TUNNEL_STATE = 10;
const DENY_LOOPBACK = JSON.stringify({ on_tcp_connect: [{ name: 'no loopback', actions: [{ type: 'restrict-ips', config: { deny: ['127.0.0.0/8'] } }] }] });

/**
 * PatchTunnelState (AGENT-PROTOCOL.md §5, type 10; the newest Go agents' endpoint `Update`),
 * with a hand-driven agent against a real `burrow serve`: BindResp names the tunnel in
 * Extra.TunnelID; a patched traffic policy applies to the next public connection and shows on the
 * endpoint; metadata shows on the tunnel; a refused patch answers its Error and changes nothing.
 */
describe('PatchTunnelState', () => {
  let server: DataPlaneServer;
  let agent: RawAgent;
  let nextStream = 5;
  let tunnel: { id: string; port: number };

  /** An RPC on a fresh stream of ours, with its reply. */
  const rpc = (type: number, body: unknown) => {
    const stream = nextStream;
    nextStream += 2;
    agent.open(stream, type, JSON.stringify(body));
    return agent.reply(stream);
  };

  /** Proxy streams burrow opened to the agent so far (even ids, SYN). */
  const proxyStreams = () => agent.frames().filter((f) => f.type === FrameType.Data && f.streamId % 2 === 0 && (f.flags & Flag.Syn) !== 0).length;

  /** Connects to the public port: 'proxied' when burrow opened a proxy stream for it, 'closed' when it closed the client first. */
  async function publicConnection(): Promise<'proxied' | 'closed'> {
    const before = proxyStreams();
    const client = net.connect(tunnel.port, '127.0.0.1');
    client.on('error', () => {});
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    try {
      return await waitFor('burrow to proxy or close the connection', async () => {
        if (proxyStreams() > before) return 'proxied';
        const done = await Promise.race([closed.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 20))]);
        return done && proxyStreams() === before ? 'closed' : undefined;
      });
    } finally {
      client.destroy();
    }
  }

  const patch = (fields: Record<string, unknown>) => rpc(PATCH_TUNNEL_STATE, { TunnelId: tunnel.id, ...fields });
  const endpointPolicy = async () => {
    const endpoints = (await api(server, 'GET', '/endpoints')).body.endpoints as { public_url: string; traffic_policy: string }[];
    return endpoints.find((e) => e.public_url === `tcp://127.0.0.1:${tunnel.port}`)?.traffic_policy;
  };

  before(async () => {
    server = await startDataPlaneServer();
    const { token } = await makeCredential(server, []);
    agent = await RawAgent.connect(server.plane.agentPort, server.caCert());
    await agent.auth(token);
    const bound = await rpc(BIND, { Id: '', Proto: 'tcp', Opts: { Addr: '' }, Extra: { Metadata: 'first' } });
    assert.equal(bound.Error ?? '', '', JSON.stringify(bound));
    tunnel = { id: String(bound.Id), port: Number(new URL(String(bound.URL).replace('tcp:', 'http:')).port) };
    assert.equal((bound.Extra as Record<string, unknown>).TunnelID, bound.Id, 'Extra.TunnelID names the tunnel');
  });

  after(async () => {
    agent?.destroy();
    await cleanupProcesses();
  });

  it('a new traffic policy applies to the next connection and shows on the endpoint; "" removes it', async () => {
    assert.equal(await publicConnection(), 'proxied');
    assert.deepEqual(await patch({ TrafficPolicy: DENY_LOOPBACK }), { Error: '' });
    assert.equal(await publicConnection(), 'closed');
    assert.equal(await endpointPolicy(), DENY_LOOPBACK);
    assert.deepEqual(await patch({ TrafficPolicy: '' }), { Error: '' });
    assert.equal(await publicConnection(), 'proxied');
    assert.equal(await endpointPolicy(), undefined, 'an endpoint without a policy leaves the field out');
  });

  it('metadata shows on the tunnel; name and description are taken and change nothing', async () => {
    assert.deepEqual(await patch({ Metadata: 'second', Name: 'n', Description: 'd' }), { Error: '' });
    const tunnels = (await api(server, 'GET', '/tunnels')).body.tunnels as { id: string; metadata: string }[];
    assert.equal(tunnels.find((t) => t.id === tunnel.id)?.metadata, 'second');
    assert.equal(await publicConnection(), 'proxied');
  });

  it('an invalid policy is refused with the policy error, and the policy in force stays', async () => {
    assert.deepEqual(await patch({ TrafficPolicy: DENY_LOOPBACK }), { Error: '' });
    const refused = await patch({ TrafficPolicy: '{"on_tcp_connect":[{"actions":[{"type":"teleport"}]}]}' });
    assert.match(String(refused.Error), /ERR_NGROK_22\d\d/);
    assert.equal(await publicConnection(), 'closed', 'still the deny policy');
    assert.equal(await endpointPolicy(), DENY_LOOPBACK);
    assert.deepEqual(await patch({ TrafficPolicy: '' }), { Error: '' });
  });

  it('an unknown tunnel id and a pooling change are refused', async () => {
    const unknown = await rpc(PATCH_TUNNEL_STATE, { TunnelId: 'tn_nope', Metadata: 'x' });
    assert.match(String(unknown.Error), /no tunnel "tn_nope"/);
    const pooling = await patch({ PoolingEnabled: true, Metadata: 'third' });
    assert.match(String(pooling.Error), /PoolingEnabled cannot change/);
    const tunnels = (await api(server, 'GET', '/tunnels')).body.tunnels as { id: string; metadata: string }[];
    assert.equal(tunnels.find((t) => t.id === tunnel.id)?.metadata, 'second', 'a refused patch changes nothing');
    assert.deepEqual(await patch({ PoolingEnabled: false }), { Error: '' }, 'the same pooling setting is fine');
  });

  it('a labeled tunnel takes new metadata but no traffic policy (its edge’s module applies)', async () => {
    const labeled = await rpc(START_TUNNEL_WITH_LABEL, { Labels: { app: 'patched' }, ForwardsTo: 'localhost:1', ForwardsProto: '', Metadata: 'm1' });
    const id = String(labeled.Id);
    const refused = await rpc(PATCH_TUNNEL_STATE, { TunnelId: id, TrafficPolicy: DENY_LOOPBACK, Metadata: 'never' });
    assert.match(String(refused.Error), /labeled tunnel takes no traffic policy/);
    assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: id, Metadata: 'm2' }), { Error: '' });
    const tunnels = (await api(server, 'GET', '/tunnels')).body.tunnels as { id: string; metadata: string }[];
    assert.equal(tunnels.find((t) => t.id === id)?.metadata, 'm2', 'the refused patch wrote nothing; the next one did');
  });
});
