// @test-pass postgres
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { Flag, FrameType, encodeData } from '../../src/tunnels/muxado/index.js';
import { eventually, get } from '../helpers/cluster.js';
import { clusterSchema, clusterSkipReason } from '../helpers/cluster-db.js';
import { EDGE_A, EDGE_B, startInstancePair, type InstancePair, type PairedInstance } from '../helpers/cluster-pair.js';
import { makeCredential } from '../helpers/data-plane.js';
import { RawAgent } from '../helpers/raw-agent.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

/**
 * PatchTunnelState in a cluster (CLUSTER.md §2: the policy runs once, on the accepting instance,
 * and must be the tunnel's current one): an endpoint is held on A by a hand-driven agent (the JS
 * SDK has no way to patch a listener) whose tunnel opened the pool, and by an official SDK agent
 * pooled with it; requests go through B before and after the agent patches the traffic policy.
 * Each request runs the policy of the tunnel it was balanced to (docs/DECISIONS.md "Pooled
 * endpoints with different policies"): the raw agent's patched one, the SDK agent's none.
 *
 * PostgreSQL is its own (test/helpers/cluster-db.ts): it runs once per CI run, in the PostgreSQL pass.
 */
const skip = await clusterSkipReason('cluster-policy-patch suite');

const HOST = 'patched.burrow.localhost';
const BIND = 1;
const UNBIND = 2;
const START_TUNNEL_WITH_LABEL = 7;
const PATCH_TUNNEL_STATE = 10;

const addHeader = (value: string) => JSON.stringify({ on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-policy': value } } }] }] });
const DENY = JSON.stringify({ on_http_request: [{ actions: [{ type: 'deny', config: { status_code: 451 } }] }] });

describe('a patched traffic policy in a cluster', { skip, timeout: 120_000 }, () => {
  const schema = clusterSchema('patch');
  const closers: (() => unknown)[] = [];
  let a: PairedInstance;
  let b: PairedInstance;
  let ports: InstancePair['ports'];
  let raw: RawAgent;
  let session: ngrok.Session;
  let rawTunnelId: string;
  let nextStream = 5;
  const answered = new Set<number>();

  /** An RPC of the raw agent on a fresh stream, with its reply. */
  const rpc = (type: number, body: unknown) => {
    const stream = nextStream;
    nextStream += 2;
    raw.open(stream, type, JSON.stringify(body));
    return raw.reply(stream);
  };

  /** Answers every proxy stream burrow opened to the raw agent, as the SDK's local server does: with the x-policy header it got. */
  function serveRawProxyStreams(): void {
    for (const frame of raw.frames()) {
      if (frame.type !== FrameType.Data || frame.streamId % 2 !== 0 || answered.has(frame.streamId)) continue;
      const request = raw.data(frame.streamId).bytes.toString('latin1');
      if (!request.includes('\r\n\r\n')) continue;
      answered.add(frame.streamId);
      const body = `raw x-policy=${/\r\nx-policy: ([^\r]*)/i.exec(request)?.[1] ?? 'none'}`;
      raw.write(encodeData(frame.streamId, Flag.Fin, Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`)));
    }
  }

  /** Four requests through `edgeHost` (both tunnels of the pool, round-robin): each one's status, or which agent answered and the x-policy it saw; sorted. */
  async function answers(edgeHost: string, host = HOST): Promise<string[]> {
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const answer = await get(edgeHost, ports.http, host);
      seen.push(answer.status === 200 ? answer.body : String(answer.status));
    }
    return seen.sort();
  }

  /** What four requests see, two on each tunnel, sorted as `answers` are. */
  const twice = (one: string, other: string) => [one, one, other, other].sort();

  /** Polls B until the answers are `expected`; resolves with how long after `since` that was. */
  async function throughBWithin(expected: string[], since: number, host = HOST): Promise<number> {
    let last: string[] = [];
    while (Date.now() - since < 3_000) {
      last = await answers(EDGE_B, host);
      if (JSON.stringify(last) === JSON.stringify(expected)) return Date.now() - since;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.fail(`B still answers ${JSON.stringify(last)} 3 s after the patch, not ${JSON.stringify(expected)}`);
  }

  before(async () => {
    ({ a, b, ports } = await startInstancePair(schema.url));
    const { token } = await makeCredential(a, []);

    raw = await RawAgent.connect(a.agentPort, a.ca);
    await raw.auth(token);
    const serving = setInterval(serveRawProxyStreams, 5);
    closers.push(() => clearInterval(serving));
    const bound = await rpc(BIND, { Id: '', Proto: 'http', Opts: { Hostname: HOST, TrafficPolicy: addHeader('v1') }, Extra: { PoolingEnabled: true } });
    assert.equal(bound.Error ?? '', '', JSON.stringify(bound));
    rawTunnelId = String(bound.Id);

    const local = http.createServer((req, res) => res.end(`sdk x-policy=${req.headers['x-policy'] ?? 'none'}`));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    closers.push(() => local.close());
    session = await new ngrok.SessionBuilder().authtoken(token).serverAddr(`127.0.0.1:${a.agentPort}`).caCert(a.ca).connect();
    // pooled with the raw agent's tunnel, which opened the pool (the endpoint shows its policy); this one has none
    await session.httpEndpoint().domain(HOST).scheme('HTTP').poolingEnabled(true).listenAndForward(`http://127.0.0.1:${(local.address() as net.AddressInfo).port}`);
  });

  after(async () => {
    await session?.close().catch(() => {});
    raw?.destroy();
    for (const close of closers) await close();
    await cleanupProcesses();
    await schema.drop();
  });

  it('before any patch, A and B run the policy of the tunnel each request goes to', async () => {
    const expected = twice('raw x-policy=v1', 'sdk x-policy=none');
    assert.deepEqual(await answers(EDGE_A), expected);
    await eventually(async () => assert.deepEqual(await answers(EDGE_B), expected));
  });

  it('a patched policy runs on B within 1 s of the patch answer, on its tunnel\'s requests', async () => {
    assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: rawTunnelId, TrafficPolicy: addHeader('v2') }), { Error: '' });
    const patched = Date.now();
    const expected = twice('raw x-policy=v2', 'sdk x-policy=none');
    assert.deepEqual(await answers(EDGE_A), expected);
    const elapsed = await throughBWithin(expected, patched);
    assert.ok(elapsed < 1_000, `B ran the patched policy ${elapsed} ms after the patch answer`);
  });

  it('a patch to a denying policy denies its tunnel\'s requests on B too; "" removes the policy everywhere', async () => {
    assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: rawTunnelId, TrafficPolicy: DENY }), { Error: '' });
    const denied = Date.now();
    const expected = twice('451', 'sdk x-policy=none');
    assert.deepEqual(await answers(EDGE_A), expected);
    assert.ok((await throughBWithin(expected, denied)) < 1_000, 'B denies within 1 s');

    assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: rawTunnelId, TrafficPolicy: '' }), { Error: '' });
    const removed = Date.now();
    assert.ok((await throughBWithin(twice('raw x-policy=none', 'sdk x-policy=none'), removed)) < 1_000, 'B runs no policy within 1 s');
  });

  it('requests through B never fail while a patch is taken there', async () => {
    const failures: string[] = [];
    let running = true;
    const load = (async () => {
      while (running) {
        const answer = await get(EDGE_B, ports.http, HOST).catch((error: Error) => ({ status: 0, body: error.message }));
        if (answer.status !== 200) failures.push(`${answer.status} ${answer.body}`);
      }
    })();
    for (const value of ['p1', 'p2', 'p3']) {
      assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: rawTunnelId, TrafficPolicy: addHeader(value) }), { Error: '' });
      await throughBWithin(twice(`raw x-policy=${value}`, 'sdk x-policy=none'), Date.now());
    }
    running = false;
    await load;
    assert.deepEqual(failures, []);
  });

  it('a patch of a tunnel that did not open its pool runs at once on its requests, on B too, and alone once the first tunnel is gone', async () => {
    const host = 'second.burrow.localhost';
    const bind = async (value: string) => {
      const bound = await rpc(BIND, { Id: '', Proto: 'http', Opts: { Hostname: host, TrafficPolicy: addHeader(value) }, Extra: { PoolingEnabled: true } });
      assert.equal(bound.Error ?? '', '', JSON.stringify(bound));
      return String(bound.Id);
    };
    const first = await bind('first');
    const second = await bind('second');
    await eventually(async () => assert.deepEqual(await answers(EDGE_B, host), twice('raw x-policy=first', 'raw x-policy=second')));
    assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: second, TrafficPolicy: addHeader('second-patched') }), { Error: '' });
    const patched = Date.now();
    const expected = twice('raw x-policy=first', 'raw x-policy=second-patched');
    assert.deepEqual(await answers(EDGE_A, host), expected);
    assert.ok((await throughBWithin(expected, patched, host)) < 1_000, 'B runs the patched policy of the newer tunnel within 1 s');
    assert.deepEqual(await rpc(UNBIND, { Id: first }), {});
    const unbound = Date.now();
    assert.deepEqual(await answers(EDGE_A, host), Array(4).fill('raw x-policy=second-patched'));
    assert.ok((await throughBWithin(Array(4).fill('raw x-policy=second-patched'), unbound, host)) < 1_000, 'B runs the remaining tunnel\'s policy alone within 1 s');
  });

  it('a TCP endpoint keeps its port open on B while a patch is taken there', async () => {
    const allow = (cidr: string) => JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { allow: [cidr] } }] }] });
    const bound = await rpc(BIND, { Id: '', Proto: 'tcp', Opts: { Addr: '', TrafficPolicy: allow('127.0.0.0/8') } });
    assert.equal(bound.Error ?? '', '', JSON.stringify(bound));
    const port = Number(new URL(String(bound.URL).replace('tcp:', 'http:')).port);
    const exchange = () =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect({ host: EDGE_B, port }, () => socket.write('ping\r\n\r\n'));
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.once('close', () => (chunks.length > 0 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error('closed without an answer'))));
        socket.once('error', reject);
        socket.setTimeout(5_000, () => socket.destroy(new Error('timeout')));
      });
    await eventually(exchange);
    const failures: string[] = [];
    let running = true;
    const loader = async () => {
      while (running) await exchange().catch((error: Error) => failures.push(error.message));
    };
    const load = Promise.all([loader(), loader(), loader()]);
    for (const cidr of ['127.0.0.0/16', '127.0.0.0/24', '127.0.0.0/12', '127.0.0.0/20', '0.0.0.0/0']) {
      assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: String(bound.Id), TrafficPolicy: allow(cidr) }), { Error: '' });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    running = false;
    await load;
    assert.deepEqual(failures, []);
  });

  it('a labeled tunnel (an edge\'s backend) takes no policy patch: refused on A, so B has no policy of it to catch up with; its metadata patch shows through B', async () => {
    const started = await rpc(START_TUNNEL_WITH_LABEL, { Labels: { app: 'patch' }, ForwardsTo: 'localhost:1', ForwardsProto: '', Metadata: 'm1' });
    assert.equal(started.Error ?? '', '', JSON.stringify(started));
    const refused = await rpc(PATCH_TUNNEL_STATE, { TunnelId: String(started.Id), TrafficPolicy: addHeader('edge') });
    assert.match(String(refused.Error), /labeled tunnel takes no traffic policy/);
    assert.deepEqual(await rpc(PATCH_TUNNEL_STATE, { TunnelId: String(started.Id), Metadata: 'patched' }), { Error: '' });
    const tunnels = (await api(b, 'GET', '/tunnels')).body.tunnels as { id: string; metadata: string }[];
    assert.equal(tunnels.find((each) => each.id === started.Id)?.metadata, 'patched');
  });
});
