import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { makeAccount } from '../helpers/data-plane.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';

/**
 * The traffic inspector fed by real traffic (CONSOLE.md §2): a real `burrow serve`, the official
 * SDK as the agent, a local server. Capture off records nothing; heads record heads only; bodies
 * record each body up to the bound with its whole length; secrets are redacted; another
 * account sees none of it. Replay sends a captured request again through the endpoint.
 */

let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
let host: string;
let endpointId: string;
/** What reached the local server, in order. */
const seen: { line: string; body: string; headers: http.IncomingHttpHeaders }[] = [];

interface Captured {
  id: string;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  client_ip: string;
  request_headers: Record<string, string[]>;
  response_headers: Record<string, string[]>;
  actions: string[];
  request_body?: { data: string; length: number; truncated: boolean };
  response_body?: { data: string; length: number; truncated: boolean };
}

function send(path: string, options: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, path, method: options.method ?? 'GET', headers: { host, ...options.headers }, agent: false, timeout: 20_000 });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.end(options.body);
  });
}

async function listed(): Promise<Captured[]> {
  const response = await api(server, 'GET', `/endpoints/${endpointId}/requests?limit=100`);
  assert.equal(response.status, 200, response.text);
  return response.body.requests as Captured[];
}

/** The captured request with this path, once it is listed (at most 5 s). */
async function capturedAt(path: string): Promise<Captured> {
  let found: Captured | undefined;
  await within(5_000, async () => (found = (await listed()).find((item) => item.path === path)) !== undefined);
  return found!;
}

/** Sets the account's capture, then waits until the data plane applies it (its cache refreshes each second). */
async function capture(settings: Record<string, unknown>, probe: (n: number) => Promise<boolean>): Promise<void> {
  const patched = await api(server, 'PATCH', '/traffic_inspection', { body: settings });
  assert.equal(patched.status, 200, patched.text);
  let n = 0;
  await within(8_000, () => probe(n++));
}

before(async () => {
  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  local = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ line: `${req.method} ${req.url}`, body: Buffer.concat(chunks).toString(), headers: req.headers });
      res.setHeader('set-cookie', 'session=local-secret');
      res.setHeader('x-local', 'yes');
      // echoes the body, so the answer's body is as long as the request's
      res.end(chunks.length > 0 ? Buffer.concat(chunks) : `hello ${req.url}`);
    });
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  const listener = await session.httpEndpoint().domain('inspect.burrow.localhost').scheme('HTTP').listenAndForward(`http://127.0.0.1:${(local.address() as { port: number }).port}`);
  host = `inspect.burrow.localhost:${server.httpPort}`;
  const endpoints = (await api(server, 'GET', '/endpoints')).body.endpoints as { id: string; url: string }[];
  endpointId = endpoints.find((each) => each.url === listener.url())!.id;
  assert.ok(endpointId, 'the endpoint is listed');
});

after(async () => {
  await session?.close().catch(() => {});
  local?.close();
  await cleanupProcesses();
});

describe('traffic inspection of real traffic', () => {
  test('capture off records nothing; heads record method, path, headers, status, client and no body', async () => {
    assert.equal((await send('/before?x=1')).status, 200);
    await capture({ capture: 'heads' }, async (n) => {
      await send(`/probe-heads-${n}`);
      return (await listed()).some((item) => item.path.startsWith('/probe-heads-'));
    });
    const paths = (await listed()).map((item) => item.path);
    assert.ok(!paths.includes('/before?x=1'), `a request sent while capture was off was recorded: ${paths.join(', ')}`);

    const answer = await send('/heads?q=2', { method: 'POST', body: 'a small body', headers: { authorization: 'Bearer top-secret', cookie: 'a=b', 'x-trace': 'one', 'content-type': 'text/plain' } });
    assert.equal(answer.status, 200);
    const item = await capturedAt('/heads?q=2');
    assert.match(item.id, /^req_[0-9A-Za-z]{27}$/);
    assert.equal(item.method, 'POST');
    assert.equal(item.status, 200);
    assert.equal(item.client_ip, '127.0.0.1');
    assert.ok(item.duration_ms >= 0);
    assert.deepEqual(item.request_headers['x-trace'], ['one']);
    assert.deepEqual(item.request_headers.authorization, ['[REDACTED]']);
    assert.deepEqual(item.request_headers.cookie, ['[REDACTED]']);
    assert.deepEqual(item.response_headers['set-cookie'], ['[REDACTED]']);
    assert.deepEqual(item.response_headers['x-local'], ['yes']);
    assert.deepEqual(item.response_headers['content-length'], ['12']);
    assert.equal(item.request_body, undefined, 'heads: no body');
    assert.equal(item.response_body, undefined, 'heads: no body');
    const raw = JSON.stringify(await api(server, 'GET', `/endpoints/${endpointId}/requests/${item.id}`).then((r) => r.body));
    assert.ok(!raw.includes('top-secret') && !raw.includes('local-secret'), 'no secret stored');
  });

  test('bodies: each body kept up to the bound, its whole length told; secrets shown once redaction is off', async () => {
    await capture({ capture: 'bodies', body_limit_bytes: 1000, redact_secrets: false }, async (n) => {
      await send(`/probe-bodies-${n}`, { method: 'POST', body: 'x' });
      // an earlier probe's record may be the first written (each is written within 250 ms)
      return (await listed()).some((item) => item.path.startsWith('/probe-bodies-') && item.request_body !== undefined);
    });
    const big = Buffer.alloc(5000);
    for (let i = 0; i < big.length; i++) big[i] = 65 + (i % 26);
    const answer = await send('/big', { method: 'PUT', body: big, headers: { authorization: 'Bearer shown-now' } });
    assert.deepEqual(answer.body, big, 'the answer is whole: capture only copies');
    const item = await capturedAt('/big');
    assert.deepEqual(item.request_body, { data: big.subarray(0, 1000).toString('base64'), length: 5000, truncated: true });
    assert.deepEqual(item.response_body, { data: big.subarray(0, 1000).toString('base64'), length: 5000, truncated: true });
    assert.deepEqual(item.request_headers.authorization, ['Bearer shown-now']);

    await send('/small', { method: 'POST', body: 'tiny' });
    const small = await capturedAt('/small');
    assert.deepEqual(small.request_body, { data: Buffer.from('tiny').toString('base64'), length: 4, truncated: false });
    assert.deepEqual(small.response_body, { data: Buffer.from('tiny').toString('base64'), length: 4, truncated: false });
    const get = await send('/get');
    assert.equal(get.body.toString(), 'hello /get');
    const got = await capturedAt('/get');
    assert.deepEqual(got.request_body, { data: '', length: 0, truncated: false });
    assert.equal(Buffer.from(got.response_body!.data, 'base64').toString(), 'hello /get');
  });

  test('replay sends the captured request again, recorded under the id answered; a body not captured whole is needed', async () => {
    const small = await capturedAt('/small');
    const before = seen.length;
    const replayed = await api(server, 'POST', `/endpoints/${endpointId}/requests/${small.id}/replay`);
    assert.equal(replayed.status, 201, replayed.text);
    assert.match(replayed.body.id, /^req_[0-9A-Za-z]{27}$/);
    assert.notEqual(replayed.body.id, small.id);
    await within(5_000, async () => seen.length > before);
    assert.deepEqual({ line: seen[before]!.line, body: seen[before]!.body }, { line: 'POST /small', body: 'tiny' });
    assert.equal(seen[before]!.headers['burrow-replay'], undefined, 'the replay marker is not forwarded');
    let again: Captured | undefined;
    await within(5_000, async () => (again = (await listed()).find((item) => item.id === replayed.body.id)) !== undefined);
    assert.equal(again!.path, '/small');
    assert.equal(again!.status, 200);
    assert.equal(again!.request_headers['burrow-replay'], undefined);

    const big = await capturedAt('/big');
    const cut = await api(server, 'POST', `/endpoints/${endpointId}/requests/${big.id}/replay`, { body: {} });
    assert.equal(cut.status, 400, cut.text);
    assert.equal(cut.body.error_code, 'ERR_NGROK_215');
    assert.match(cut.body.msg, /body/);
    const edited = await api(server, 'POST', `/endpoints/${endpointId}/requests/${big.id}/replay`, { body: { path: '/edited?e=1', body: 'edited body', headers: { 'x-edit': ['yes'] } } });
    assert.equal(edited.status, 201, edited.text);
    await within(5_000, async () => seen.some((each) => each.line === 'PUT /edited?e=1'));
    const arrived = seen.find((each) => each.line === 'PUT /edited?e=1')!;
    assert.equal(arrived.body, 'edited body');
    assert.equal(arrived.headers['x-edit'], 'yes');
    assert.equal(arrived.headers.authorization, undefined, 'edited headers replace the captured ones');

    const headsOnly = await capturedAt('/heads?q=2');
    const noBody = await api(server, 'POST', `/endpoints/${endpointId}/requests/${headsOnly.id}/replay`);
    assert.equal(noBody.status, 400, noBody.text);
    assert.equal(noBody.body.error_code, 'ERR_NGROK_215');
    const badPath = await api(server, 'POST', `/endpoints/${endpointId}/requests/${small.id}/replay`, { body: { path: 'no-slash' } });
    assert.equal(badPath.status, 400, badPath.text);
    const unknownField = await api(server, 'POST', `/endpoints/${endpointId}/requests/${small.id}/replay`, { body: { hostname: 'x' } });
    assert.equal(unknownField.status, 400, unknownField.text);
  });

  test('a replay is recorded with capture off; a visitor’s own Burrow-Replay header is dropped and marks nothing', async () => {
    await capture({ capture: 'off' }, async (n) => {
      await send(`/probe-off-${n}`);
      await new Promise((resolve) => setTimeout(resolve, 400));
      return !(await listed()).some((item) => item.path === `/probe-off-${n}`);
    });
    const got = await capturedAt('/get');
    const replayed = await api(server, 'POST', `/endpoints/${endpointId}/requests/${got.id}/replay`);
    assert.equal(replayed.status, 201, replayed.text);
    await within(5_000, async () => (await listed()).some((item) => item.id === replayed.body.id));

    const before = seen.length;
    await send('/forged', { headers: { 'burrow-replay': 'guessed-token' } });
    assert.equal(seen[before]!.line, 'GET /forged');
    assert.equal(seen[before]!.headers['burrow-replay'], undefined);
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.ok(!(await listed()).some((item) => item.path === '/forged'), 'an unknown token does not turn capture on');
  });

  test('the policy actions taken are listed with the answer they made', async () => {
    await capture({ capture: 'heads' }, async (n) => {
      await send(`/probe-actions-${n}`);
      return (await listed()).some((item) => item.path.startsWith('/probe-actions-'));
    });
    const policy = `on_http_request:
  - expressions: ["req.url.path == '/teapot'"]
    actions:
      - type: custom-response
        config: {status_code: 418, body: "short and stout"}
`;
    const listener = await session.httpEndpoint().domain('policed.burrow.localhost').scheme('HTTP').policy(policy).listenAndForward(`http://127.0.0.1:${(local.address() as { port: number }).port}`);
    const policed = ((await api(server, 'GET', '/endpoints')).body.endpoints as { id: string; url: string }[]).find((each) => each.url === listener.url())!.id;
    const answer = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: server.httpPort, path: '/teapot', headers: { host: `policed.burrow.localhost:${server.httpPort}` }, agent: false });
      req.once('response', (res) => (res.resume(), resolve(res.statusCode!)));
      req.once('error', reject);
      req.end();
    });
    assert.equal(answer, 418);
    let item: Captured | undefined;
    await within(5_000, async () => {
      const response = await api(server, 'GET', `/endpoints/${policed}/requests`);
      item = (response.body.requests as Captured[]).find((each) => each.path === '/teapot');
      return item !== undefined;
    });
    assert.equal(item!.status, 418);
    assert.deepEqual(item!.actions, ['on_http_request:custom-response']);
    await listener.close();
  });

  test("another account's endpoint's requests are 404, replay included", async () => {
    const item = (await listed())[0]!;
    const other = await makeAccount(server, 'inspect-other');
    const list = await api(server, 'GET', `/endpoints/${endpointId}/requests`, { key: other.apiKey });
    assert.equal(list.status, 404, list.text);
    const one = await api(server, 'GET', `/endpoints/${endpointId}/requests/${item.id}`, { key: other.apiKey });
    assert.equal(one.status, 404, one.text);
    const replay = await api(server, 'POST', `/endpoints/${endpointId}/requests/${item.id}/replay`, { key: other.apiKey });
    assert.equal(replay.status, 404, replay.text);
  });
});
