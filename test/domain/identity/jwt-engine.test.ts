// IDENTITY.md §3: jwt-validation in the request phase, with keys made here and a key set served
// by a fake fetch: each refusal's answer, the result variables, the JWKS cache's rules.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWK } from 'jose';
import { compilePolicy, evaluateHttpRequest, settleDecision, RateBuckets, type HttpDecision, type PolicyConnection, type PolicyHttpRequest, type PolicyProgram } from '../../../src/domain/policy/index.js';
import { JwtVerifier } from '../../../src/domain/identity/jwt-verify.js';
import { cacheTtl, JwksCache, JWKS_LIMITS, type JwksFetch } from '../../../src/domain/identity/jwt-keys.js';

/** jose's key type (a WebCrypto CryptoKey, which the project's lib settings do not name). */
type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

const ISSUER = 'https://issuer.example/';
const JKU = 'https://issuer.example/jwks.json';
const NOW = Date.now();

const ENDPOINT = { url: 'https://app.example.com', addr: 'app.example.com:443', host: 'app.example.com', id: 'ep_1', protocol: 'https', port: 443 };
const connection = (clientIp: string): PolicyConnection => ({ clientIp, clientPort: 50123, serverIp: '10.0.0.1', serverPort: 443, region: 'eu', startedAt: NOW - 1000, endpoint: ENDPOINT, now: NOW });

function program(tokens: string, extraRules = ''): PolicyProgram {
  const document = `
on_http_request:
  - actions:
      - type: jwt-validation
        config:
          issuer: {allow_list: [{value: "${ISSUER}"}]}
          audience: {allow_list: [{value: "urn:api"}]}
          http: {tokens: ${tokens}}
          jws:
            allowed_algorithms: [RS256, ES256]
            keys: {sources: {additional_jkus: ["${JKU}"]}}
${extraRules}`;
  const compiled = compilePolicy(document, { endpoint: 'https', subject: 'endpoint' });
  assert.ok(compiled.ok, compiled.ok ? '' : `${compiled.error.code}: ${compiled.error.message}`);
  return compiled.program;
}

const HEADER_TOKEN = `[{type: access_token, method: header, name: Authorization, prefix: "Bearer "}]`;
const LATER_RULES = `
  - expressions: ["actions.ngrok.jwt_validation.tokens[0].verified == true"]
    actions:
      - type: add-headers
        config: {headers: {x-sub: "\${actions.ngrok.jwt_validation.tokens[0].payload.sub}", x-client: "\${conn.client_ip}"}}`;

/** A key set server in memory: what it serves, how often it was asked. */
class FakeProvider {
  keys: JWK[] = [];
  fetches = 0;
  answer: (() => Promise<Response>) | undefined;
  cacheControl: string | undefined;
  readonly fetch: JwksFetch = async (url, init) => {
    this.fetches++;
    assert.equal(url, JKU);
    assert.ok(init.signal instanceof AbortSignal);
    if (this.answer) return this.answer();
    return new Response(JSON.stringify({ keys: this.keys }), { status: 200, headers: this.cacheControl ? { 'cache-control': this.cacheControl } : {} });
  };
}

let rsa: { privateKey: SigningKey; publicKey: SigningKey; jwk: JWK; pem: string };
let other: { privateKey: SigningKey; jwk: JWK };

before(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  rsa = { ...pair, jwk: { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }, pem: await exportSPKI(pair.publicKey) };
  const second = await generateKeyPair('ES256', { extractable: true });
  other = { privateKey: second.privateKey, jwk: { ...(await exportJWK(second.publicKey)), kid: 'k2', alg: 'ES256' } };
});

interface Claims {
  iss?: string;
  aud?: string;
  sub?: string;
  exp?: number;
  nbf?: number;
}

async function sign(claims: Claims = {}, key: { kid: string; alg: string; privateKey: SigningKey } = { kid: 'k1', alg: 'RS256', privateKey: rsa.privateKey }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: ISSUER, aud: 'urn:api', sub: 'alice', exp: now + 600, ...claims };
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function request(headers: string[], extra: Partial<PolicyHttpRequest> = {}): PolicyHttpRequest {
  return { method: 'GET', target: '/api', version: '1.1', scheme: 'https', headers: ['Host', 'app.example.com', ...headers], receivedAt: NOW, ...extra };
}

async function run(prog: PolicyProgram, req: PolicyHttpRequest, verifier: JwtVerifier, ip = '203.0.113.7'): Promise<HttpDecision> {
  const decision = evaluateHttpRequest(prog, { connection: connection(ip), request: req, buckets: new RateBuckets() });
  return settleDecision(decision, (config, tokens) => verifier.verify(config, tokens));
}

function header(lines: readonly string[], name: string): string | undefined {
  for (let i = 0; i < lines.length; i += 2) if (lines[i]!.toLowerCase() === name) return lines[i + 1];
  return undefined;
}

function setup(): { provider: FakeProvider; verifier: JwtVerifier; clock: { now: number } } {
  const provider = new FakeProvider();
  provider.keys = [rsa.jwk];
  const clock = { now: NOW };
  return { provider, verifier: new JwtVerifier(new JwksCache(provider.fetch, () => clock.now)), clock };
}

const bearer = (token: string) => ['Authorization', `Bearer ${token}`];

describe('jwt-validation in the request phase', () => {
  test('a valid token passes; later rules read the result variables; the connection is this request\'s after the wait', async () => {
    const { verifier, provider } = setup();
    const prog = program(HEADER_TOKEN, LATER_RULES);
    const [a, b] = await Promise.all([run(prog, request(bearer(await sign())), verifier, '198.51.100.1'), run(prog, request(bearer(await sign({ sub: 'bob' }))), verifier, '198.51.100.2')]);
    for (const [decision, sub, ip] of [[a, 'alice', '198.51.100.1'], [b, 'bob', '198.51.100.2']] as const) {
      assert.equal(decision.answer, undefined, JSON.stringify(decision.errors));
      assert.equal(header(decision.headers, 'x-sub'), sub);
      assert.equal(header(decision.headers, 'x-client'), ip);
      assert.deepEqual(decision.taken.map((t) => t.type), ['jwt-validation', 'add-headers']);
    }
    assert.equal(provider.fetches, 1, 'concurrent requests share one fetch');
  });

  const refusals: Array<[string, () => Promise<string[]>, string]> = [
    ['expired', async () => bearer(await sign({ exp: Math.floor(NOW / 1000) - 120 })), 'it has expired'],
    ['not yet valid', async () => bearer(await sign({ nbf: Math.floor(NOW / 1000) + 300 })), 'it is not valid yet'],
    ['wrong audience', async () => bearer(await sign({ aud: 'urn:other' })), 'its audience is not allowed'],
    ['wrong issuer', async () => bearer(await sign({ iss: 'https://issuer.example' })), 'its issuer is not allowed'],
    ['no exp', async () => bearer(await new SignJWT({ iss: ISSUER, aud: 'urn:api' }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(rsa.privateKey)), '"exp" claim'],
    ['alg none', async () => bearer(`${b64({ alg: 'none', kid: 'k1' })}.${b64({ iss: ISSUER, aud: 'urn:api', exp: Math.floor(NOW / 1000) + 600 })}.`), 'algorithm is not one of the allowed'],
    [
      'HS256 signed with the public key',
      async () => bearer(await new SignJWT({ iss: ISSUER, aud: 'urn:api', exp: Math.floor(NOW / 1000) + 600 }).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(new TextEncoder().encode(rsa.pem))),
      'algorithm is not one of the allowed',
    ],
    [
      'tampered payload',
      async () => {
        const [h, , s] = (await sign()).split('.');
        return bearer(`${h}.${b64({ iss: ISSUER, aud: 'urn:api', sub: 'admin', exp: Math.floor(NOW / 1000) + 600 })}.${s}`);
      },
      'signature does not verify',
    ],
    ['not a JWT', async () => bearer('abc.def'), 'not a signed JWT'],
    ['another scheme', async () => ['Authorization', `Basic ${await sign()}`], 'prefix'],
    ['signed by a key not in the set', async () => bearer(await sign({}, { kid: 'k1', alg: 'ES256', privateKey: other.privateKey })), 'algorithm'],
  ];
  for (const [name, headers, reason] of refusals) {
    test(`refused: ${name} → 401 Bearer error="invalid_token"`, async () => {
      const { verifier } = setup();
      const decision = await run(program(HEADER_TOKEN, LATER_RULES), request(await headers()), verifier);
      assert.equal(decision.answer?.status, 401);
      assert.equal(header(decision.answer.headers, 'www-authenticate'), 'Bearer error="invalid_token"');
      assert.ok(decision.answer.body.includes(reason), decision.answer.body);
      assert.deepEqual(decision.taken.map((t) => t.type), ['jwt-validation'], 'nothing after the refusal runs');
    });
  }

  test('clock skew: a token expired 10 s ago still passes', async () => {
    const { verifier } = setup();
    const decision = await run(program(HEADER_TOKEN), request(bearer(await sign({ exp: Math.floor(Date.now() / 1000) - 10 }))), verifier);
    assert.equal(decision.answer, undefined);
  });

  test('missing token → 401 Bearer without an error, and no fetch', async () => {
    const { provider } = setup();
    const decision = evaluateHttpRequest(program(HEADER_TOKEN), { connection: connection('203.0.113.7'), request: request([]), buckets: new RateBuckets() });
    assert.equal(decision.pending, undefined);
    assert.equal(decision.answer?.status, 401);
    assert.equal(header(decision.answer.headers, 'www-authenticate'), 'Bearer');
    assert.equal(provider.fetches, 0);
  });

  test('the bearer scheme is matched without regard to case', async () => {
    const { verifier } = setup();
    const decision = await run(program(HEADER_TOKEN), request(['authorization', `bearer ${await sign()}`]), verifier);
    assert.equal(decision.answer, undefined);
  });

  test('every configured token must be present and valid', async () => {
    const { verifier } = setup();
    const prog = program(`[{type: jwt, method: header, name: X-A}, {type: jwt, method: header, name: X-B}]`);
    assert.equal((await run(prog, request(['X-A', await sign()]), verifier)).answer?.status, 401);
    assert.equal((await run(prog, request(['X-A', await sign(), 'X-B', await sign({ aud: 'urn:x' })]), verifier)).answer?.status, 401);
    assert.equal((await run(prog, request(['X-A', await sign(), 'X-B', await sign()]), verifier)).answer, undefined);
  });

  test('body tokens: JSON and form fields on POST, PUT and PATCH only', async () => {
    const { verifier } = setup();
    const prog = program(`[{type: it+jwt, method: body, name: _id_token}]`);
    const token = await sign();
    const json = request(['Content-Type', 'application/json; charset=utf-8'], { method: 'POST', body: Buffer.from(JSON.stringify({ _ID_TOKEN: token, other: 1 })) });
    assert.equal((await run(prog, json, verifier)).answer, undefined);
    const form = request(['Content-Type', 'application/x-www-form-urlencoded'], { method: 'PATCH', body: Buffer.from(`a=1&_id_token=${token}`) });
    assert.equal((await run(prog, form, verifier)).answer, undefined);
    const get = request(['Content-Type', 'application/json'], { method: 'GET', body: Buffer.from(JSON.stringify({ _id_token: token })) });
    assert.equal(header((await run(prog, get, verifier)).answer!.headers, 'www-authenticate'), 'Bearer');
    const text = request(['Content-Type', 'text/plain'], { method: 'POST', body: Buffer.from(token) });
    assert.equal((await run(prog, text, verifier)).answer?.status, 401);
    const broken = request(['Content-Type', 'application/json'], { method: 'POST', body: Buffer.from('{"_id_token": ') });
    assert.equal((await run(prog, broken, verifier)).answer?.status, 401);
  });
});

describe('the key sets', () => {
  test('a key rotated in is fetched at once on its first token', async () => {
    const { verifier, provider } = setup();
    const prog = program(HEADER_TOKEN);
    assert.equal((await run(prog, request(bearer(await sign())), verifier)).answer, undefined);
    assert.equal(provider.fetches, 1);
    provider.keys = [rsa.jwk, other.jwk];
    const rotated = await sign({}, { kid: 'k2', alg: 'ES256', privateKey: other.privateKey });
    assert.equal((await run(prog, request(bearer(rotated)), verifier)).answer, undefined, 'the rotated key is fetched at once');
    assert.equal(provider.fetches, 2);
    assert.equal((await run(prog, request(bearer(rotated)), verifier)).answer, undefined, 'and kept');
    assert.equal(provider.fetches, 2);
  });

  test('concurrent requests with a new kid wait for the same refetch', async () => {
    const { verifier, provider } = setup();
    const prog = program(HEADER_TOKEN);
    assert.equal((await run(prog, request(bearer(await sign())), verifier)).answer, undefined);
    provider.keys = [rsa.jwk, other.jwk];
    const rotated = await sign({}, { kid: 'k2', alg: 'ES256', privateKey: other.privateKey });
    const decisions = await Promise.all([1, 2, 3].map(() => run(prog, request(bearer(rotated)), verifier)));
    assert.deepEqual(decisions.map((d) => d.answer?.status), [undefined, undefined, undefined]);
    assert.equal(provider.fetches, 2);
  });

  test('unknown kids within 30 s share one refetch', async () => {
    const { verifier, provider, clock } = setup();
    const prog = program(HEADER_TOKEN);
    const unknown = (kid: string) => sign({}, { kid, alg: 'RS256', privateKey: rsa.privateKey });
    assert.equal((await run(prog, request(bearer(await unknown('x1'))), verifier)).answer?.status, 401);
    assert.equal(provider.fetches, 2, 'the first fetch and one refetch');
    assert.equal((await run(prog, request(bearer(await unknown('x2'))), verifier)).answer?.status, 401);
    assert.equal(provider.fetches, 2, 'no second refetch within 30 s');
    clock.now += JWKS_LIMITS.kidRefetchMs;
    assert.equal((await run(prog, request(bearer(await unknown('x3'))), verifier)).answer?.status, 401);
    assert.equal(provider.fetches, 3);
  });

  test('kept for its Cache-Control max-age, bounded', async () => {
    assert.equal(cacheTtl(null), JWKS_LIMITS.defaultTtlMs);
    assert.equal(cacheTtl('public, max-age=120'), 120_000);
    assert.equal(cacheTtl('max-age=1'), JWKS_LIMITS.minTtlMs);
    assert.equal(cacheTtl('max-age=999999'), JWKS_LIMITS.maxTtlMs);
    assert.equal(cacheTtl('no-store'), JWKS_LIMITS.minTtlMs);
    const { verifier, provider, clock } = setup();
    provider.cacheControl = 'max-age=120';
    const prog = program(HEADER_TOKEN);
    await run(prog, request(bearer(await sign())), verifier);
    clock.now += 119_000;
    await run(prog, request(bearer(await sign())), verifier);
    assert.equal(provider.fetches, 1);
    clock.now += 2_000;
    await run(prog, request(bearer(await sign())), verifier);
    assert.equal(provider.fetches, 2);
  });

  const broken: Array<[string, () => Promise<Response>, RegExp]> = [
    ['answers 500', async () => new Response('oops', { status: 500 }), /answered 500/],
    ['serves HTML', async () => new Response('<html>', { status: 200 }), /did not serve JSON/],
    ['serves JSON without keys', async () => new Response('{"k": []}', { status: 200 }), /did not serve a JWKS/],
    ['serves too much', async () => new Response(new ReadableStream({ pull: (c) => c.enqueue(new Uint8Array(64 * 1024)) }), { status: 200 }), /more than 262144 bytes/],
    ['declares too much', async () => new Response('{}', { status: 200, headers: { 'content-length': String(JWKS_LIMITS.maxBytes + 1) } }), /more than/],
    ['is unreachable', async () => Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })), /unreachable \(ECONNREFUSED\)/],
  ];
  for (const [name, answer, problem] of broken) {
    test(`a provider that ${name}: 401 invalid_token, the problem reported, then a short backoff`, async () => {
      const { verifier, provider } = setup();
      provider.answer = answer;
      const prog = program(HEADER_TOKEN);
      const decision = await run(prog, request(bearer(await sign())), verifier);
      assert.equal(decision.answer?.status, 401);
      assert.equal(header(decision.answer.headers, 'www-authenticate'), 'Bearer error="invalid_token"');
      assert.match(decision.answer.body, /signing keys could not be fetched/);
      assert.doesNotMatch(decision.answer.body, /issuer\.example/, 'the client is not told the key URL');
      assert.equal(decision.errors.length, 1);
      assert.match(decision.errors[0]!.message, problem);
      const fetches = provider.fetches;
      await run(prog, request(bearer(await sign())), verifier);
      assert.equal(provider.fetches, fetches, 'no new fetch during the backoff');
    });
  }

  test('a provider that never answers: refused within the fetch timeout', async () => {
    const slow: JwksFetch = (url, init) => new Promise((_, reject) => init.signal.addEventListener('abort', () => reject(init.signal.reason)));
    const timed = new JwtVerifier(new JwksCache(slow));
    const started = Date.now();
    // AbortSignal.timeout's timer does not hold the event loop open; the server's sockets do.
    const open = setTimeout(() => {}, 10_000);
    const decision = await run(program(HEADER_TOKEN), request(bearer(await sign())), timed);
    clearTimeout(open);
    assert.equal(decision.answer?.status, 401);
    assert.ok(Date.now() - started < JWKS_LIMITS.timeoutMs + 1500);
    assert.match(decision.errors[0]!.message, /no answer within 4 s/);
  });

  test('a stale set stays in use when a refresh fails', async () => {
    const { verifier, provider, clock } = setup();
    const prog = program(HEADER_TOKEN);
    assert.equal((await run(prog, request(bearer(await sign())), verifier)).answer, undefined);
    provider.answer = async () => new Response('down', { status: 503 });
    clock.now += JWKS_LIMITS.defaultTtlMs + 1;
    const decision = await run(prog, request(bearer(await sign())), verifier);
    assert.equal(decision.answer, undefined);
    assert.equal(provider.fetches, 2);
  });
});

describe('jwt-validation and a login action in one request phase', () => {
  const LOGIN_AFTER = `
  - actions:
      - type: openid-connect
        config: {issuer_url: "https://login.example", client_id: app, client_secret: app-secret}`;

  test('the phase resumed after the token goes on to the login action, which ends it with the 302 to /ngrok/login', async () => {
    const { verifier } = setup();
    const decision = await run(program(HEADER_TOKEN, LOGIN_AFTER), request(bearer(await sign())), verifier);
    assert.deepEqual(decision.taken.map((t) => t.type), ['jwt-validation', 'openid-connect']);
    assert.equal(decision.pending, undefined);
    assert.equal(decision.answer?.status, 302);
    assert.match(header(decision.answer!.headers, 'location') ?? '', /^\/ngrok\/login\?auth_id=/);
    assert.equal(decision.login?.config.provider, 'https://login.example');
    assert.equal(decision.login?.redirectPath, '/api');
  });

  test('a request without its token is answered 401 before any login starts', async () => {
    const { verifier, provider } = setup();
    const decision = await run(program(HEADER_TOKEN, LOGIN_AFTER), request([]), verifier);
    assert.equal(decision.answer?.status, 401);
    assert.equal(decision.login, undefined);
    assert.equal(provider.fetches, 0);
  });
});
