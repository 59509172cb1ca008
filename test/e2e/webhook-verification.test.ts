import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { connectAgent, createToken, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/**
 * verify-webhook and the SDK's WebhookVerification option end to end (HTTP-POLICY.md §2, §4): a
 * real `burrow serve`, the official SDK as the agent, signatures computed as the providers
 * document them. Verified deliveries reach the local server with their body intact; others are
 * answered 403 and never arrive; the secret is in no log line. One log line per request.
 */

const SECRET = 'gh-webhook-secret-4f1c9a';
const STRIPE_SECRET = 'whsec_stripe_test_7d2e';
let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
let burrowCa: string;
const seen: Array<{ url: string; body: string; headers: http.IncomingHttpHeaders }> = [];
const listeners: ngrok.Listener[] = [];
const GH = 'hooks-gh.burrow.localhost';
const STRIPE = 'hooks-stripe.burrow.localhost';

const github = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const stripe = (body: string, ts: number) => `t=${ts},v1=${createHmac('sha256', STRIPE_SECRET).update(`${ts}.${body}`).digest('hex')}`;

function post(scheme: 'http' | 'https', host: string, path: string, body: string | Buffer, headers: Record<string, string> = {}, chunked = false): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const port = scheme === 'http' ? server.httpPort : server.tlsPort;
    const common = { host: '127.0.0.1', port, path, method: 'POST', headers: { host: `${host}:${port}`, 'content-type': 'application/json', ...headers }, agent: false as const, timeout: 30_000 };
    const req = scheme === 'http' ? http.request(common) : https.request({ ...common, servername: host, ca: burrowCa });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    if (chunked) {
      // two pieces, framed chunked by Node (no Content-Length)
      const text = Buffer.from(body);
      req.write(text.subarray(0, 5));
      setTimeout(() => req.end(text.subarray(5)), 20);
    } else req.end(body);
  });
}

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath, 'utf8');
  session = await connectAgent(server, await createToken(server));
  local = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ url: req.url!, body: Buffer.concat(chunks).toString(), headers: req.headers });
      res.setHeader('content-type', 'text/plain');
      res.end(`got ${req.url}`);
    });
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  const target = `http://127.0.0.1:${(local.address() as { port: number }).port}`;
  listeners.push(await session.httpEndpoint().domain(GH).webhookVerification('github', SECRET).listenAndForward(target));
  listeners.push(await session.httpEndpoint().domain(GH).scheme('HTTP').webhookVerification('github', SECRET).listenAndForward(target));
  const policy = `on_http_request:\n  - expressions: ["req.url.path.startsWith('/stripe')"]\n    actions:\n      - type: verify-webhook\n        config: {provider: stripe, secret: "${STRIPE_SECRET}"}\n`;
  listeners.push(await session.httpEndpoint().domain(STRIPE).policy(policy).listenAndForward(target));
});

after(async () => {
  for (const listener of listeners) await listener.close().catch(() => {});
  await session?.close().catch(() => {});
  await new Promise((resolve) => local?.close(resolve));
  await cleanupProcesses();
});

for (const scheme of ['https', 'http'] as const) {
  describe(`SDK .webhookVerification("github", secret) on ${scheme}`, () => {
    test('a delivery signed with the secret reaches the agent with its body intact', { timeout: 30_000 }, async () => {
      const body = JSON.stringify({ zen: 'Keep it logically awesome.', scheme });
      const answer = await post(scheme, GH, '/hook', body, { 'x-hub-signature-256': github(body), 'x-github-event': 'ping' });
      assert.equal(answer.status, 200, answer.body);
      assert.equal(seen.at(-1)!.body, body);
      assert.equal(seen.at(-1)!.headers['content-length'], String(Buffer.byteLength(body)));
    });

    test('a chunked delivery is verified and forwarded with its length', { timeout: 30_000 }, async () => {
      const body = JSON.stringify({ chunked: true, scheme });
      const answer = await post(scheme, GH, '/chunked', body, { 'x-hub-signature-256': github(body) }, true);
      assert.equal(answer.status, 200, answer.body);
      assert.equal(seen.at(-1)!.url, '/chunked');
      assert.equal(seen.at(-1)!.body, body);
      assert.equal(seen.at(-1)!.headers['transfer-encoding'], undefined);
    });

    test('a tampered body, another secret or no signature: 403, nothing reaches the agent', { timeout: 30_000 }, async () => {
      const before = seen.length;
      const body = '{"action":"opened"}';
      for (const [text, headers] of [
        ['{"action":"closed"}', { 'x-hub-signature-256': github(body) }],
        [body, { 'x-hub-signature-256': github(body, 'not-the-secret') }],
        [body, {}],
      ] as const) {
        const answer = await post(scheme, GH, '/hook', text, headers);
        assert.equal(answer.status, 403);
        assert.match(answer.body, /webhook signature could not be verified \(github: /);
        assert.ok(!answer.body.includes(SECRET));
      }
      assert.equal(seen.length, before);
    });
  });
}

describe('verify-webhook in a policy', () => {
  test('stripe: a fresh signature passes, a replayed (old) one and a missing one are refused; rules not matching pass untouched', { timeout: 30_000 }, async () => {
    const body = '{"type":"invoice.paid"}';
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await post('https', STRIPE, '/stripe', body, { 'stripe-signature': stripe(body, now) })).status, 200);
    assert.equal(seen.at(-1)!.body, body);
    const before = seen.length;
    assert.equal((await post('https', STRIPE, '/stripe', body, { 'stripe-signature': stripe(body, now - 600) })).status, 403);
    assert.equal((await post('https', STRIPE, '/stripe', body)).status, 403);
    assert.equal(seen.length, before);
    // the rule's expression does not hold: the body is read but forwarded as sent
    assert.equal((await post('https', STRIPE, '/other', 'plain')).status, 200);
    assert.equal(seen.at(-1)!.body, 'plain');
  });

  test('keep-alive requests queued behind a body being read are answered in order', { timeout: 30_000 }, async () => {
    const port = server.httpPort;
    const bodies = ['{"n":1}', '{"n":2}', '{"n":3}'];
    const raw = bodies
      .map((b, i) => `POST /k${i} HTTP/1.1\r\nHost: ${GH}:${port}\r\nContent-Type: application/json\r\nX-Hub-Signature-256: ${github(b)}\r\nContent-Length: ${b.length}\r\n\r\n${b}`)
      .join('');
    const text = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(raw));
      let got = '';
      socket.on('data', (c) => {
        got += c.toString();
        if ((got.match(/got \/k\d/g) ?? []).length === 3) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.once('error', reject);
      setTimeout(() => reject(new Error(`timeout: ${got}`)), 20_000).unref();
    });
    assert.deepEqual(text.match(/got \/k\d/g), ['got /k0', 'got /k1', 'got /k2']);
  });

  test('a body over 10 MiB is answered 413 and the connection closed', { timeout: 60_000 }, async () => {
    const before = seen.length;
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 0x61);
    const answer = await post('http', GH, '/big', big, { 'x-hub-signature-256': 'sha256=00' }).catch((error: Error) => ({ status: 0, body: error.message }));
    // the answer may race the upload's reset; when it comes, it is a 413
    if (answer.status !== 0) assert.equal(answer.status, 413);
    assert.equal(seen.length, before);
    // just inside the limit passes
    const fits = Buffer.alloc(10 * 1024 * 1024, 0x62).toString();
    assert.equal((await post('http', GH, '/fits', fits, { 'x-hub-signature-256': github(fits) })).status, 200);
    assert.equal(seen.at(-1)!.body.length, fits.length);
  });

  test('one log line per request with status, duration and actions; no secret in any line', { timeout: 30_000 }, async () => {
    const body = '{"logged":true}';
    await post('https', GH, '/logged?token=abc', body, { 'x-hub-signature-256': github(body) });
    let line: Record<string, unknown> | undefined;
    await within(10_000, async () => {
      line = server.logs().find((entry) => entry.event === 'http_request' && entry.path === '/logged');
      return line !== undefined;
    });
    assert.equal(line!.status, 200);
    assert.equal(line!.method, 'POST');
    assert.equal(typeof line!.duration_ms, 'number');
    assert.deepEqual(line!.policy_actions, ['on_http_request:verify-webhook']);
    const denied = server.logs().find((entry) => entry.event === 'http_request' && entry.status === 403);
    assert.ok(denied, 'refused deliveries are logged too');
    const all = JSON.stringify(server.logs());
    assert.ok(!all.includes(SECRET) && !all.includes(STRIPE_SECRET), 'no secret in the logs');
    assert.ok(!all.includes('token=abc'), 'the query is not logged');
  });
});

describe('on_tcp_connect close-connection', () => {
  test('closes the connection before any request reaches the agent; the log line names the action', { timeout: 30_000 }, async () => {
    const host = 'closed.burrow.localhost';
    const target = `http://127.0.0.1:${(local.address() as { port: number }).port}`;
    const policy = 'on_tcp_connect:\n  - name: nobody\n    actions: [{type: close-connection}]\n';
    listeners.push(await session.httpEndpoint().domain(host).scheme('HTTP').policy(policy).listenAndForward(target));
    const before = seen.length;
    const outcome = await post('http', host, '/x', 'x').then((a) => `answered ${a.status}`, (error: NodeJS.ErrnoException) => error.code ?? error.message);
    assert.match(outcome, /ECONNRESET|EPIPE|socket hang up/);
    assert.equal(seen.length, before);
    await within(10_000, async () =>
      server.logs().some((entry) => entry.event === 'public_connection' && (entry.denied_by as { action?: string } | undefined)?.action === 'close-connection'),
    );
  });
});
