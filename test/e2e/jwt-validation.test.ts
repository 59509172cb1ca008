import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWK } from 'jose';
import { connectAgent, createToken, freePort, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/** jose's key type (a WebCrypto CryptoKey, which the project's lib settings do not name). */
type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/**
 * jwt-validation end to end (IDENTITY.md §3): a real `burrow serve`, the official SDK as the
 * agent, keys made here with jose and served from a local JWKS URL. Each refusal is a 401 with
 * `WWW-Authenticate: Bearer` (error="invalid_token" when a token was presented) and never
 * reaches the local server; a provider that is down or silent is a 401 within seconds and a log
 * line; no token value is in any log line. Runs on both stores (the bind writes the policy).
 */

const ISSUER = 'https://issuer.burrow.test/';
const AUDIENCE = 'urn:burrow:api';
const API = 'jwt-api.burrow.localhost';
const FORM = 'jwt-form.burrow.localhost';
const DOWN = 'jwt-down.burrow.localhost';
const SILENT = 'jwt-silent.burrow.localhost';

let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
let jwksServer: http.Server;
let silentServer: net.Server;
const silentSockets: net.Socket[] = [];
const listeners: ngrok.Listener[] = [];
const seen: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
/** What the JWKS URL serves, and how often it was asked. */
const jwks = { keys: [] as JWK[], fetches: 0 };
const issued: string[] = [];

let first: { privateKey: SigningKey; jwk: JWK; pem: string };
let rotated: { privateKey: SigningKey; jwk: JWK };

async function sign(claims: Record<string, unknown> = {}, key: { kid: string; alg: string; privateKey: SigningKey } = { kid: 'k1', alg: 'RS256', privateKey: first.privateKey }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'alice', exp: now + 600, ...claims }).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
  issued.push(token);
  return token;
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function send(host: string, path: string, headers: Record<string, string> = {}, body?: string, method = body === undefined ? 'GET' : 'POST'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, path, method, headers: { host: `${host}:${server.httpPort}`, ...headers }, agent: false, timeout: 20_000 });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString(), ms: Date.now() - started }));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

function policy(jku: string, tokens: string): string {
  return `
on_http_request:
  - actions:
      - type: jwt-validation
        config:
          issuer: {allow_list: [{value: "${ISSUER}"}]}
          audience: {allow_list: [{value: "${AUDIENCE}"}]}
          http: {tokens: ${tokens}}
          jws:
            allowed_algorithms: [RS256, ES256]
            keys: {sources: {additional_jkus: ["${jku}"]}}
  - actions:
      - type: add-headers
        config: {headers: {x-jwt-sub: "\${actions.ngrok.jwt_validation.tokens[0].payload.sub}"}}
`;
}
const HEADER_TOKEN = `[{type: access_token, method: header, name: Authorization, prefix: "Bearer "}]`;

before(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  first = { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }, pem: await exportSPKI(pair.publicKey) };
  const second = await generateKeyPair('ES256', { extractable: true });
  rotated = { privateKey: second.privateKey, jwk: { ...(await exportJWK(second.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' } };
  jwks.keys = [first.jwk];

  jwksServer = http.createServer((req, res) => {
    jwks.fetches++;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
    res.end(JSON.stringify({ keys: jwks.keys }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  silentServer = net.createServer((socket) => void silentSockets.push(socket));
  await new Promise<void>((resolve) => silentServer.listen(0, '127.0.0.1', resolve));
  local = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.end(`hello ${String(req.headers['x-jwt-sub'])}`);
    });
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));

  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  const target = `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;
  const jku = `http://127.0.0.1:${(jwksServer.address() as net.AddressInfo).port}/jwks.json`;
  const closed = `http://127.0.0.1:${await freePort()}/jwks.json`;
  const silent = `http://127.0.0.1:${(silentServer.address() as net.AddressInfo).port}/jwks.json`;
  const endpoint = (host: string, document: string) => session.httpEndpoint().domain(host).scheme('HTTP').policy(document).listenAndForward(target);
  listeners.push(await endpoint(API, policy(jku, HEADER_TOKEN)));
  listeners.push(await endpoint(FORM, policy(jku, `[{type: it+jwt, method: body, name: _id_token}]`)));
  listeners.push(await endpoint(DOWN, policy(closed, HEADER_TOKEN)));
  listeners.push(await endpoint(SILENT, policy(silent, HEADER_TOKEN)));
});

after(async () => {
  for (const listener of listeners) await listener.close().catch(() => {});
  await session?.close().catch(() => {});
  for (const socket of silentSockets) socket.destroy();
  await Promise.all([local, jwksServer, silentServer].map((s) => new Promise((resolve) => (s ? s.close(resolve) : resolve(undefined)))));
  await cleanupProcesses();
});

function assertRefused(answer: { status: number; headers: http.IncomingHttpHeaders; body: string }, challenge: string, reason?: RegExp): void {
  assert.equal(answer.status, 401, answer.body);
  assert.equal(answer.headers['www-authenticate'], challenge);
  if (reason) assert.match(answer.body, reason);
}

describe('jwt-validation on a burrow endpoint', () => {
  test('a valid token reaches the agent; later rules read the token\'s claims', { timeout: 30_000 }, async () => {
    const answer = await send(API, '/ok', { authorization: `Bearer ${await sign()}` });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, 'hello alice');
    assert.equal(seen.at(-1)!.headers['x-jwt-sub'], 'alice');
  });

  const refusals: Array<[string, () => Promise<Record<string, string>>, string, RegExp]> = [
    ['a missing token', async () => ({}), 'Bearer', /needs a JSON Web Token/],
    ['an expired token', async () => ({ authorization: `Bearer ${await sign({ exp: Math.floor(Date.now() / 1000) - 3600 })}` }), 'Bearer error="invalid_token"', /expired/],
    ['a token not yet valid', async () => ({ authorization: `Bearer ${await sign({ nbf: Math.floor(Date.now() / 1000) + 3600 })}` }), 'Bearer error="invalid_token"', /not valid yet/],
    ['a wrong audience', async () => ({ authorization: `Bearer ${await sign({ aud: 'urn:other' })}` }), 'Bearer error="invalid_token"', /audience/],
    ['a wrong issuer', async () => ({ authorization: `Bearer ${await sign({ iss: 'https://evil.example/' })}` }), 'Bearer error="invalid_token"', /issuer/],
    ['alg: none', async () => ({ authorization: `Bearer ${b64({ alg: 'none', kid: 'k1' })}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'admin', exp: Math.floor(Date.now() / 1000) + 600 })}.` }), 'Bearer error="invalid_token"', /algorithm/],
    [
      'HS256 signed with the public key (key confusion)',
      async () => ({ authorization: `Bearer ${await new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'admin', exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(new TextEncoder().encode(first.pem))}` }),
      'Bearer error="invalid_token"',
      /algorithm/,
    ],
    [
      'a tampered payload',
      async () => {
        const [head, , signature] = (await sign()).split('.');
        return { authorization: `Bearer ${head}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'admin', exp: Math.floor(Date.now() / 1000) + 600 })}.${signature}` };
      },
      'Bearer error="invalid_token"',
      /signature/,
    ],
    ['garbage', async () => ({ authorization: 'Bearer not-a-jwt' }), 'Bearer error="invalid_token"', /not a signed JWT/],
  ];
  for (const [name, headers, challenge, reason] of refusals) {
    test(`${name}: 401 ${challenge}, nothing reaches the agent`, { timeout: 30_000 }, async () => {
      const count = seen.length;
      assertRefused(await send(API, '/refused', await headers()), challenge, reason);
      assert.equal(seen.length, count);
    });
  }

  test('a key rotated in is used at once (its unknown kid refetches the set); another unknown kid within 30 s does not refetch', { timeout: 30_000 }, async () => {
    const before = jwks.fetches;
    jwks.keys = [first.jwk, rotated.jwk];
    const token = await sign({ sub: 'rotated' }, { kid: 'k2', alg: 'ES256', privateKey: rotated.privateKey });
    const answer = await send(API, '/rotate', { authorization: `Bearer ${token}` });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, 'hello rotated');
    assert.equal(jwks.fetches, before + 1, 'the unknown kid refetched once');
    const unknown = await sign({}, { kid: 'k3', alg: 'RS256', privateKey: first.privateKey });
    assertRefused(await send(API, '/unknown', { authorization: `Bearer ${unknown}` }), 'Bearer error="invalid_token"', /no key/);
    assert.equal(jwks.fetches, before + 1, 'no second refetch within 30 s');
  });

  test('pipelined requests are answered in order while their tokens are verified', { timeout: 30_000 }, async () => {
    const port = server.httpPort;
    const tokens = [await sign({ sub: 'p0' }), 'bad.token.here', await sign({ sub: 'p2' })];
    const raw = tokens.map((t, i) => `GET /p${i} HTTP/1.1\r\nHost: ${API}:${port}\r\nAuthorization: Bearer ${t}\r\n\r\n`).join('');
    const text = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(raw));
      let got = '';
      socket.on('data', (c) => {
        got += c.toString();
        if ((got.match(/hello p2/g) ?? []).length === 1) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.once('error', reject);
      setTimeout(() => reject(new Error(`timeout: ${got}`)), 20_000).unref();
    });
    assert.deepEqual(text.match(/HTTP\/1\.1 \d+/g), ['HTTP/1.1 200', 'HTTP/1.1 401', 'HTTP/1.1 200']);
    assert.ok(text.indexOf('hello p0') < text.indexOf('hello p2'));
  });

  test('an upgrade (WebSocket) request is judged too: no token or a bad one is a 401 and the connection closes', { timeout: 30_000 }, async () => {
    const port = server.httpPort;
    const count = seen.length;
    for (const [authorization, challenge] of [['', 'Bearer'], [`Authorization: Bearer ${await sign({ aud: 'urn:x' })}\r\n`, 'Bearer error="invalid_token"']] as const) {
      const text = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () =>
          socket.write(`GET /ws HTTP/1.1\r\nHost: ${API}:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${authorization}\r\n`),
        );
        let got = '';
        socket.on('data', (c) => (got += c.toString()));
        socket.once('close', () => resolve(got));
        socket.once('error', reject);
        setTimeout(() => reject(new Error(`timeout: ${got}`)), 20_000).unref();
      });
      assert.match(text, /^HTTP\/1\.1 401 /);
      assert.ok(text.includes(`\r\nWWW-Authenticate: ${challenge}\r\n`), text);
    }
    assert.equal(seen.length, count);
  });

  test('a body token: JSON or form field on POST; a GET never carries one', { timeout: 30_000 }, async () => {
    const token = await sign({ sub: 'form' });
    const json = await send(FORM, '/json', { 'content-type': 'application/json' }, JSON.stringify({ _id_token: token, note: 'kept' }));
    assert.equal(json.status, 200, json.body);
    assert.equal(seen.at(-1)!.body, JSON.stringify({ _id_token: token, note: 'kept' }), 'the body reaches the agent intact');
    const form = await send(FORM, '/form', { 'content-type': 'application/x-www-form-urlencoded' }, `_id_token=${token}&a=1`);
    assert.equal(form.status, 200, form.body);
    const count = seen.length;
    assertRefused(await send(FORM, '/get', { 'content-type': 'application/json' }), 'Bearer');
    assertRefused(await send(FORM, '/bad', { 'content-type': 'application/json' }, JSON.stringify({ _id_token: await sign({ aud: 'urn:x' }) })), 'Bearer error="invalid_token"');
    assert.equal(seen.length, count);
  });

  test('a key provider that is down, or silent: 401 within a few seconds, and a log line', { timeout: 30_000 }, async () => {
    const token = await sign();
    const down = await send(DOWN, '/down', { authorization: `Bearer ${token}` });
    assertRefused(down, 'Bearer error="invalid_token"', /signing keys could not be fetched/);
    assert.ok(down.ms < 5000, `${down.ms} ms`);
    const silent = await send(SILENT, '/silent', { authorization: `Bearer ${token}` });
    assertRefused(silent, 'Bearer error="invalid_token"', /signing keys could not be fetched/);
    assert.ok(silent.ms < 6000, `${silent.ms} ms`);
    await within(10_000, async () => JSON.stringify(server.logs()).includes('no answer within 4 s'));
    await within(10_000, async () => JSON.stringify(server.logs()).includes('unreachable'));
  });

  test('a policy with alg none, or HS256, is refused at bind with the reference\'s code', { timeout: 30_000 }, async () => {
    for (const alg of ['none', 'HS256']) {
      const document = policy('https://issuer.burrow.test/jwks', HEADER_TOKEN).replace('[RS256, ES256]', `[${alg}]`);
      const refusal = await session.httpEndpoint().domain('jwt-bad.burrow.localhost').policy(document).listen().then((l) => l.close().then(() => undefined), (error: unknown) => error);
      assert.ok(refusal, 'the bind was accepted');
      assert.match(String((refusal as Error).message), /ERR_NGROK_7177/);
    }
  });

  test('the request log line lists the action; no token is in any log line', { timeout: 30_000 }, async () => {
    await send(API, '/logged', { authorization: `Bearer ${await sign()}` });
    await within(10_000, async () => server.logs().some((entry) => entry.event === 'http_request' && entry.path === '/logged'));
    const line = server.logs().find((entry) => entry.event === 'http_request' && entry.path === '/logged')!;
    assert.deepEqual(line.policy_actions, ['on_http_request:jwt-validation', 'on_http_request:add-headers']);
    const all = JSON.stringify(server.logs());
    for (const token of issued) assert.ok(!all.includes(token.split('.')[2]!), 'a token signature is in the logs');
  });
});
