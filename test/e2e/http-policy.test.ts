import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { connectAgent, createToken, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/**
 * HTTP traffic policy (HTTP-POLICY.md §1–§2) end to end: a real `burrow serve`, the official SDK
 * as the agent with a policy sent with the bind, and a local server that answers with what
 * reached it. Allowed requests arrive edited; refused ones never arrive; answers are edited on
 * the way back; actions are counted in /metrics and listed in the connection's log line.
 */

let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
let burrowCa: string;
/** What reached the local server, newest last. */
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }> = [];
const listeners: ngrok.Listener[] = [];
const BIG = Buffer.from('burrow compresses streamed answers. '.repeat(2000).slice(0, 64 * 1024));

type Scheme = 'http' | 'https';
interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(scheme: Scheme, host: string, path: string, headers: Record<string, string> = {}, method = 'GET', raw?: (body: Buffer) => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const port = scheme === 'http' ? server.httpPort : server.tlsPort;
    const common = { host: '127.0.0.1', port, path, method, headers: { host: `${host}:${port}`, ...headers }, agent: false as const, timeout: 20_000 };
    const req = scheme === 'http' ? http.request(common) : https.request({ ...common, servername: host, ca: burrowCa });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => {
        raw?.(Buffer.concat(chunks));
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() });
      });
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function bind(scheme: Scheme, domain: string, policy: string): Promise<void> {
  const builder = session.httpEndpoint().domain(domain).policy(policy);
  if (scheme === 'http') builder.scheme('HTTP');
  const address = local.address() as { port: number };
  listeners.push(await builder.listenAndForward(`http://127.0.0.1:${address.port}`));
}

const POLICY = `
on_http_request:
  - name: health answered at the edge
    expressions: ["req.url.path == '/health'"]
    actions:
      - type: custom-response
        config: {status_code: 200, body: "ok from \${req.host}", headers: {content-type: text/plain}}
  - name: old paths move
    actions:
      - type: redirect
        config: {from: "^(https?)://([^/]+)/old/(.*)$", to: "$1://$2/new/$3", status_code: 301}
  - name: admin needs a password
    expressions: ["req.url.path.startsWith('/admin')"]
    actions:
      - type: basic-auth
        config: {realm: staff, credentials: ["admin:s3cretpass"]}
  - name: private is denied
    expressions: ["req.url.path.startsWith('/private')"]
    actions:
      - type: deny
        config: {status_code: 404}
  - name: tag and strip
    actions:
      - type: remove-headers
        config: {headers: [x-secret]}
      - type: add-headers
        config: {headers: {x-client-ip: "\${conn.client_ip}", x-original-path: "\${req.url.path}"}}
      - type: url-rewrite
        config: {from: "/v1/", to: "/v2/"}
      - type: set-vars
        config: {vars: [{stage: beta}]}
  - name: limited
    expressions: ["req.url.path.startsWith('/limited')"]
    actions:
      - type: rate-limit
        config: {name: limited, algorithm: sliding_window, capacity: 2, rate: 60s, bucket_key: ["\${req.url.path}"]}
on_http_response:
  - actions:
      - type: compress-response
        config: {algorithms: [gzip, br]}
      - type: remove-headers
        config: {headers: [x-powered-by]}
      - type: add-headers
        config: {headers: {x-stage: "\${vars.stage}", x-status: "\${res.status_code}"}}
  - expressions: ["res.status_code == 500"]
    actions:
      - type: custom-response
        config: {status_code: 503, body: "the service is resting"}
`;

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath, 'utf8');
  session = await connectAgent(server, await createToken(server));
  local = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    res.setHeader('x-powered-by', 'local');
    res.statusCode = req.url === '/fail' ? 500 : 200;
    if (req.url === '/big') {
      // a streamed body of unknown length, in pieces
      res.setHeader('content-type', 'text/plain');
      for (let i = 0; i < 64; i++) res.write(BIG.subarray(i * 1024, (i + 1) * 1024));
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ url: req.url, headers: req.headers }));
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  for (const listener of listeners) await listener.close().catch(() => {});
  await session?.close().catch(() => {});
  await new Promise((resolve) => local?.close(resolve));
  await cleanupProcesses();
});

for (const scheme of ['http', 'https'] as const) {
  describe(`${scheme} endpoint with HTTP phases`, () => {
    const host = `policy-${scheme}.burrow.localhost`;
    before(async () => bind(scheme, host, POLICY));

    test('an allowed request reaches the agent edited; its answer comes back edited', { timeout: 30_000 }, async () => {
      const before = seen.length;
      const answer = await request(scheme, host, '/v1/items?x=1', { 'x-secret': 'hunter2', 'x-kept': 'yes' });
      assert.equal(answer.status, 200, answer.body);
      const reached = seen.at(-1)!;
      assert.equal(seen.length, before + 1);
      assert.equal(reached.url, '/v2/items?x=1');
      assert.equal(reached.headers['x-secret'], undefined);
      assert.equal(reached.headers['x-kept'], 'yes');
      assert.equal(reached.headers['x-client-ip'], '127.0.0.1');
      assert.equal(reached.headers['x-original-path'], '/v1/items');
      assert.equal(answer.headers['x-powered-by'], undefined);
      assert.equal(answer.headers['x-stage'], 'beta');
      assert.equal(answer.headers['x-status'], '200');
    });

    test('answers made by actions never reach the agent', { timeout: 30_000 }, async () => {
      const before = seen.length;
      const health = await request(scheme, host, '/health');
      assert.equal(health.status, 200);
      assert.equal(health.body, `ok from ${host}:${scheme === 'http' ? server.httpPort : server.tlsPort}`);
      // the response phase runs on an action's answer too
      assert.equal(health.headers['x-status'], '200');
      const moved = await request(scheme, host, '/old/page?q=1');
      assert.equal(moved.status, 301);
      assert.equal(moved.headers.location, `${scheme}://${host}:${scheme === 'http' ? server.httpPort : server.tlsPort}/new/page?q=1`);
      const hidden = await request(scheme, host, '/private/x');
      assert.equal(hidden.status, 404);
      assert.equal(seen.length, before);
    });

    test('basic-auth: 401 with the realm without credentials or with wrong ones; through with the right ones', { timeout: 30_000 }, async () => {
      const before = seen.length;
      const none = await request(scheme, host, '/admin');
      assert.equal(none.status, 401);
      assert.equal(none.headers['www-authenticate'], 'Basic realm="staff"');
      const wrong = await request(scheme, host, '/admin', { authorization: `Basic ${Buffer.from('admin:wrongpass1').toString('base64')}` });
      assert.equal(wrong.status, 401);
      assert.equal(seen.length, before);
      const right = await request(scheme, host, '/admin', { authorization: `Basic ${Buffer.from('admin:s3cretpass').toString('base64')}` });
      assert.equal(right.status, 200);
      assert.equal(seen.length, before + 1);
    });

    test('rate-limit: 429 with Retry-After past the capacity', { timeout: 30_000 }, async () => {
      const path = `/limited/${scheme}`;
      assert.equal((await request(scheme, host, path)).status, 200);
      assert.equal((await request(scheme, host, path)).status, 200);
      const limited = await request(scheme, host, path);
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers['retry-after']) >= 1);
    });

    test('compress-response: gzip or br as the client prefers, streamed; none without Accept-Encoding or for a small body', { timeout: 30_000 }, async () => {
      let gz: Buffer = Buffer.alloc(0);
      const gzipped = await request(scheme, host, '/big', { 'accept-encoding': 'gzip' }, 'GET', (b) => (gz = b));
      assert.equal(gzipped.headers['content-encoding'], 'gzip');
      assert.equal(gzipped.headers.vary, 'Accept-Encoding');
      assert.ok(gz.length < BIG.length / 4, `${gz.length}`);
      assert.deepEqual(zlib.gunzipSync(gz), BIG);
      let brotli: Buffer = Buffer.alloc(0);
      const br = await request(scheme, host, '/big', { 'accept-encoding': 'gzip;q=0.5, br' }, 'GET', (b) => (brotli = b));
      assert.equal(br.headers['content-encoding'], 'br');
      assert.deepEqual(zlib.brotliDecompressSync(brotli), BIG);
      const plain = await request(scheme, host, '/big');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.body, BIG.toString());
      const small = await request(scheme, host, '/v1/small', { 'accept-encoding': 'gzip' });
      assert.equal(small.headers['content-encoding'], undefined);
    });

    test('the response phase replaces a 500 with its own answer', { timeout: 30_000 }, async () => {
      const answer = await request(scheme, host, '/fail');
      assert.equal(answer.status, 503);
      assert.equal(answer.body, 'the service is resting');
    });
  });
}

describe('endpoint options served as rules of the same engine (HTTP-POLICY.md §4)', () => {
  const host = 'options.burrow.localhost';
  before(async () => {
    const address = local.address() as { port: number };
    const builder = session
      .httpEndpoint()
      .domain(host)
      .scheme('HTTP')
      .basicAuth('admin', 's3cretpass')
      .requestHeader('X-From-Option', 'yes')
      .removeRequestHeader('X-Drop')
      .responseHeader('X-Served-By', 'burrow')
      .removeResponseHeader('X-Powered-By')
      .denyUserAgent('(?i)badbot')
      .compression()
      // the options run before the agent's own policy, which sees what they did
      .policy("on_http_request:\n  - expressions: [\"getReqHeader('x-from-option') == ['yes']\"]\n    actions: [{type: add-headers, config: {headers: {x-policy-saw-option: 'yes'}}}]\n");
    listeners.push(await builder.listenAndForward(`http://127.0.0.1:${address.port}`));
  });

  test('BasicAuth: 401 without the credentials, through with them; headers added and removed both ways', { timeout: 30_000 }, async () => {
    const before = seen.length;
    const refused = await request('http', host, '/', { 'x-drop': 'x' });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['www-authenticate'], 'Basic realm="ngrok"');
    assert.equal(seen.length, before);
    const answer = await request('http', host, '/', { 'x-drop': 'x', authorization: `Basic ${Buffer.from('admin:s3cretpass').toString('base64')}` });
    assert.equal(answer.status, 200);
    const reached = seen.at(-1)!;
    assert.equal(reached.headers['x-from-option'], 'yes');
    assert.equal(reached.headers['x-drop'], undefined);
    assert.equal(reached.headers['x-policy-saw-option'], 'yes');
    assert.equal(answer.headers['x-served-by'], 'burrow');
    assert.equal(answer.headers['x-powered-by'], undefined);
  });

  test('Compression: the answer is compressed as compress-response does', { timeout: 30_000 }, async () => {
    let body: Buffer = Buffer.alloc(0);
    const answer = await request('http', host, '/big', { 'accept-encoding': 'br', authorization: `Basic ${Buffer.from('admin:s3cretpass').toString('base64')}` }, 'GET', (b) => (body = b));
    assert.equal(answer.headers['content-encoding'], 'br');
    assert.deepEqual(zlib.brotliDecompressSync(body), BIG);
  });

  test('UserAgentFilter: a denied agent gets 403 and reaches nothing', { timeout: 30_000 }, async () => {
    const before = seen.length;
    const credentials = { authorization: `Basic ${Buffer.from('admin:s3cretpass').toString('base64')}` };
    const denied = await request('http', host, '/', { ...credentials, 'user-agent': 'BadBot/2.0' });
    assert.equal(denied.status, 403);
    assert.equal(seen.length, before);
    assert.equal((await request('http', host, '/', { ...credentials, 'user-agent': 'curl/8' })).status, 200);
  });
});

test('CircuitBreaker option: after enough 5xx answers, burrow answers 503 itself and the agent rests', { timeout: 30_000 }, async () => {
  const host = 'breaker.burrow.localhost';
  const address = local.address() as { port: number };
  // the SDK's option sets the threshold; the policy's own breaker sets a small volume to trip quickly
  const policy = 'on_http_request:\n  - actions: [{type: circuit-breaker, config: {error_threshold: 0.5, volume_threshold: 2, tripped_duration: 60s}}]\n';
  listeners.push(await session.httpEndpoint().domain(host).scheme('HTTP').circuitBreaker(0.5).policy(policy).listenAndForward(`http://127.0.0.1:${address.port}`));
  assert.equal((await request('http', host, '/fail')).status, 500);
  assert.equal((await request('http', host, '/fail')).status, 500);
  const before = seen.length;
  const open = await request('http', host, '/fail');
  assert.equal(open.status, 503);
  assert.match(open.body, /circuit breaker/);
  assert.equal(seen.length, before);
});

test('an upgrade request passes the request phase too: a WebSocket to a denied path gets the deny', { timeout: 30_000 }, async () => {
  const host = 'policy-http.burrow.localhost';
  const before = seen.length;
  const socket = net.connect(server.httpPort, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.write(`GET /private/ws HTTP/1.1\r\nHost: ${host}:${server.httpPort}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
  await new Promise((resolve) => socket.once('close', resolve));
  assert.match(text, /^HTTP\/1\.1 404 /);
  assert.equal(seen.length, before);
});

test('an HTTP phase on a TCP endpoint refuses the bind with ERR_NGROK_2230', { timeout: 30_000 }, async () => {
  const refusal = await session
    .tcpEndpoint()
    .policy('on_http_request: [{actions: [{type: deny}]}]')
    .listenAndForward('tcp://127.0.0.1:1')
    .then((listener) => listener.close().then(() => undefined), (error: unknown) => error);
  assert.ok(refusal, 'the bind was accepted');
  assert.match(String((refusal as Error).message), /ERR_NGROK_2230/);
});

test('actions are counted in /metrics by type and phase and listed in the log line', { timeout: 30_000 }, async () => {
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  assert.match(metrics, /burrow_policy_actions_total\{type="basic-auth",phase="on_http_request"\} [1-9]/);
  assert.match(metrics, /burrow_policy_actions_total\{type="add-headers",phase="on_http_response"\} [1-9]/);
  let line: Record<string, unknown> | undefined;
  await within(5_000, async () => {
    line = server.logs().find((entry) => entry.event === 'public_connection' && Array.isArray(entry.policy_actions) && (entry.policy_actions as string[]).includes('on_http_request:custom-response'));
    return line !== undefined;
  });
  assert.ok(line);
  // no secret in any line: the basic-auth password and the stripped header's value
  const all = JSON.stringify(server.logs());
  assert.doesNotMatch(all, /s3cretpass|hunter2/);
});
