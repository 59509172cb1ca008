// @test-pass sqlite
// IDENTITY.md §1–§2: the login actions' configuration, OAUTH_PROVIDERS_FILE, the OIDC/OAuth
// options as rules, the sealed session cookie as the evaluator reads it, and the login flow's
// refusals against a provider the test fakes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compilePolicy, evaluateHttpRequest, optionsDocument, RateBuckets, type HttpPolicyContext } from '../../../src/domain/policy/index.js';
import { parseOAuthProviders, useOAuthProviders } from '../../../src/domain/identity/oauth-providers.js';
import { SessionCodec, sessionCookieName, withoutLoginCookies, type EdgeSession } from '../../../src/domain/identity/session.js';
import { EdgeLoginFlow } from '../../../src/domain/identity/login-flow.js';
import type { LoginConfig } from '../../../src/domain/identity/login-config.js';
import { ProviderUnavailable, type ProviderFetch } from '../../../src/domain/identity/provider-fetch.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { httpsConnection } from '../../helpers/policy.js';

const SECRET = 'cl1ent-s3cret-value';
const OIDC = `on_http_request:
  - actions:
      - type: openid-connect
        config: {issuer_url: "https://id.example.com", client_id: app, client_secret: ${SECRET}}
  - expressions: ["actions.ngrok.oidc.identity.email == 'ann@example.com'"]
    actions:
      - type: add-headers
        config: {headers: {x-user: "\${actions.ngrok.oidc.identity.name}"}}
`;

function compile(document: string) {
  return compilePolicy(document, { endpoint: 'https', subject: 'endpoint' });
}

function refusal(document: string): { code: string; message: string } {
  const compiled = compile(document);
  assert.ok(!compiled.ok, 'the policy should be refused');
  assert.ok(!compiled.error.message.includes(SECRET), 'a message never quotes the client secret');
  return compiled.error;
}

function login(config: string): string {
  return `on_http_request:\n  - actions:\n      - type: openid-connect\n        config: ${config}\n`;
}

describe('openid-connect and oauth configuration', () => {
  test('a complete action compiles, and its result variables type-check in later rules', () => {
    const compiled = compile(OIDC);
    assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
  });

  const cases: Array<[string, string, RegExp]> = [
    ['no issuer_url', '{client_id: a, client_secret: b}', /needs config\.issuer_url/],
    ['no client_id', '{issuer_url: "https://id.example.com", client_secret: b}', /needs config\.client_id: burrow has no managed/],
    ['no client_secret', '{issuer_url: "https://id.example.com", client_id: a}', /needs config\.client_secret: burrow has no managed/],
    ['an http issuer off loopback', '{issuer_url: "http://id.example.com", client_id: a, client_secret: b}', /must be an https:\/\/ URL/],
    ['an interpolated secret', `{issuer_url: "https://id.example.com", client_id: a, client_secret: "\${vars.s}${SECRET}"}`, /cannot interpolate/],
    ['a bad userinfo_refresh_interval', `{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, userinfo_refresh_interval: 0s}`, /userinfo_refresh_interval "0s" must be a duration from 1s/],
    ['a top-level auth_cookie_domain', `{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, auth_cookie_domain: com}`, /auth_cookie_domain "com" must be a domain name of two labels or more/],
    ['an auth_cookie_domain that is no name', `{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, auth_cookie_domain: "10.0.0.1"}`, /must be a domain name/],
    ['a bad duration', `{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, max_session_duration: soon}`, /must be a duration/],
    ['a reserved authz param', `{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, authz_url_params: {state: x}}`, /set by burrow itself/],
    ['an unknown key', `{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, colour: red}`, /unknown key "colour"/],
  ];
  for (const [name, config, message] of cases) {
    test(`refused: ${name}`, () => assert.match(refusal(login(config)).message, message));
  }

  test('userinfo_refresh_interval and auth_cookie_domain (both actions) compile', () => {
    assert.ok(compile(login(`{issuer_url: "https://id.example.com", client_id: a, client_secret: ${SECRET}, userinfo_refresh_interval: 15m, auth_cookie_domain: .Example.com}`)).ok);
    assert.ok(compile(`on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: github, client_id: a, client_secret: ${SECRET}, userinfo_refresh_interval: 1h, auth_cookie_domain: example.com}\n`).ok);
  });

  test('oauth needs a known provider and its own app', () => {
    assert.match(refusal('on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: myspace, client_id: a, client_secret: b}\n').message, /not a provider burrow knows; use one of google, github/);
    assert.match(refusal('on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: google}\n').message, /no managed OAuth apps/);
    assert.ok(compile(`on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: github, client_id: a, client_secret: ${SECRET}}\n`).ok);
  });
});

describe('OAUTH_PROVIDERS_FILE', () => {
  const good = { corp: { authorize_url: 'https://sso.corp.example/authorize', token_url: 'https://sso.corp.example/token', userinfo_url: 'https://sso.corp.example/me' } };

  test('adds providers and overrides a built-in one, keeping its way of reading the user', () => {
    const parsed = parseOAuthProviders(JSON.stringify({ ...good, GitHub: { authorize_url: 'https://ghe.example/login/oauth/authorize', token_url: 'https://ghe.example/login/oauth/access_token', userinfo_url: 'https://ghe.example/api/v3/user' } }));
    assert.deepEqual(parsed.map((p) => [p.name, p.reader]), [['corp', 'standard'], ['github', 'github']]);
    useOAuthProviders(parsed);
    try {
      assert.ok(compile('on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: corp, client_id: a, client_secret: b}\n').ok);
    } finally {
      useOAuthProviders([]);
    }
    assert.ok(!compile('on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: corp, client_id: a, client_secret: b}\n').ok);
  });

  const bad: Array<[string, string, RegExp]> = [
    ['not JSON', '{corp:', /is not JSON/],
    ['a list', '[]', /must be a JSON object/],
    ['a missing URL', JSON.stringify({ corp: { authorize_url: 'https://a.example/x', token_url: 'https://a.example/t' } }), /"corp" needs userinfo_url/],
    ['plain http off loopback', JSON.stringify({ corp: { ...good.corp, token_url: 'http://sso.corp.example/token' } }), /"corp"\.token_url must be an https:\/\/ URL/],
    ['an unknown field', JSON.stringify({ corp: { ...good.corp, logo: 'x' } }), /unknown field "logo"/],
    ['a bad name', JSON.stringify({ 'my provider': good.corp }), /names a provider "my provider"/],
  ];
  for (const [name, text, message] of bad) {
    test(`refused at start: ${name}`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'burrow-oauth-'));
      writeFileSync(join(dir, 'providers.json'), text);
      assert.throws(() => loadConfig({}, { OAUTH_PROVIDERS_FILE: join(dir, 'providers.json') }), (error: Error) => error instanceof ConfigError && /OAUTH_PROVIDERS_FILE/.test(error.message) && message.test(error.message));
    });
  }

  test('a file that cannot be read is refused at start', () => {
    assert.throws(() => loadConfig({}, { OAUTH_PROVIDERS_FILE: '/nonexistent/providers.json' }), /OAUTH_PROVIDERS_FILE cannot be read \(ENOENT/);
  });
});

describe('OIDC and OAuth agent options', () => {
  test('become the login action, the allow lists and the identity headers', () => {
    const options = optionsDocument({ OIDC: { issuer_url: 'https://id.example.com', client_id: 'app', client_secret: SECRET, allow_emails: ['Ann@Example.com'], allow_domains: ['corp.example'] } });
    assert.ok(options.ok && options.document);
    const compiled = compile(options.document);
    assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
    assert.deepEqual(compiled.program.phases.on_http_request.map((rule) => rule.actions[0]!.type), ['openid-connect', 'custom-response', 'remove-headers', 'add-headers', 'add-headers', 'add-headers']);
  });

  test("send the user's tokens as the reference's module does, only those the session has; a client's own copies never pass", () => {
    const options = optionsDocument({ OAuth: { provider: 'github', client_id: 'app', client_secret: SECRET } });
    assert.ok(options.ok && options.document);
    const compiled = compile(options.document);
    assert.ok(compiled.ok);
    const action = compiled.program.phases.on_http_request[0]!.actions[0]!;
    assert.ok(action.type === 'oauth');
    const now = Math.floor(NOW / 1000);
    const sealed = codec.sealSession('app.example.com', action.login, { id: 'idn_1', email: 'ann@example.com', name: 'Ann', providerUserId: '42', sessionId: 's1', createdAt: now, activeAt: now, accessToken: 'at-1', refreshToken: '' });
    const forged = ['ngrok-auth-oauth-access-token', 'forged-at', 'Ngrok-Auth-OAuth-Refresh-Token', 'forged-rt', 'ngrok-auth-user-email', 'boss@example.com'];
    const request = { method: 'GET', target: '/', version: '1.1', scheme: 'https' as const, headers: ['Host', 'app.example.com', ...forged, 'Cookie', `${sessionCookieName(action.login)}=${sealed}`], receivedAt: NOW };
    const headers = evaluateHttpRequest(compiled.program, { connection: CONNECTION, request, buckets: new RateBuckets(), logins: codec }).headers;
    const values = (name: string) => headers.filter((_, i) => i % 2 === 1 && headers[i - 1]!.toLowerCase() === name);
    assert.deepEqual(values('ngrok-auth-oauth-access-token'), ['at-1']);
    assert.deepEqual(values('ngrok-auth-oauth-refresh-token'), [], 'no refresh token: no header');
    assert.deepEqual(values('ngrok-auth-user-email'), ['ann@example.com']);
    assert.deepEqual(values('ngrok-auth-user-id'), ['42']);
  });

  test('without client credentials are refused with the reason', () => {
    const refused = optionsDocument({ OAuth: { provider: 'google' } });
    assert.ok(!refused.ok);
    assert.match(refused.message, /needs client_id and client_secret: burrow has no managed apps/);
    const sealed = optionsDocument({ OAuth: { provider: 'google', client_id: 'a', sealed_client_secret: 'AAAA' } });
    assert.ok(!sealed.ok);
    assert.match(sealed.message, /sealed client secrets are not served/);
  });
});

const NOW = Date.parse('2026-03-04T05:06:07Z');
const CONNECTION = httpsConnection('app.example.com', NOW);
const codec = new SessionCodec(Buffer.alloc(32, 7));

function loginOf(document: string): LoginConfig {
  const compiled = compile(document);
  assert.ok(compiled.ok);
  const action = compiled.program.phases.on_http_request[0]!.actions[0]!;
  assert.ok(action.type === 'openid-connect' || action.type === 'oauth');
  return action.login;
}

function evaluate(cookie: string | undefined, host = 'app.example.com') {
  const compiled = compile(OIDC);
  assert.ok(compiled.ok);
  const context: HttpPolicyContext = {
    connection: CONNECTION,
    request: { method: 'GET', target: '/inbox?x=1', version: '1.1', scheme: 'https', headers: ['Host', host, ...(cookie ? ['Cookie', cookie] : [])], receivedAt: NOW },
    buckets: new RateBuckets(),
    logins: codec,
  };
  return evaluateHttpRequest(compiled.program, context);
}

function session(ageSeconds: number, idleSeconds: number): EdgeSession {
  const now = Math.floor(NOW / 1000);
  return { id: 'idn_1', email: 'ann@example.com', name: 'Ann', providerUserId: 'sub-1', sessionId: 's1', createdAt: now - ageSeconds, activeAt: now - idleSeconds };
}

describe('the session cookie in the request phase', () => {
  const action = loginOf(OIDC);
  const cookie = (s: EdgeSession, host = 'app.example.com') => `${sessionCookieName(action)}=${codec.sealSession(host, action, s)}`;

  test('no cookie: the phase ends with a login back to the same path', () => {
    const decision = evaluate(undefined);
    assert.equal(decision.login?.redirectPath, '/inbox?x=1');
    // where the login cannot start at once (an upgrade, `burrow policy test`), the answer is the login page
    assert.equal(decision.answer?.status, 302);
    assert.equal(decision.answer?.headers[1], `/ngrok/login?auth_id=${decision.login.config.key}&redirect_path=%2Finbox%3Fx%3D1`);
  });

  test('a valid session: identity variables for later rules, and the request goes on', () => {
    const decision = evaluate(`theme=dark; ${cookie(session(10, 10))}`);
    assert.equal(decision.login, undefined);
    const index = decision.headers.findIndex((h) => h.toLowerCase() === 'x-user');
    assert.equal(decision.headers[index + 1], 'Ann');
    assert.deepEqual(decision.setCookies, [], 'a session used within the minute is not re-sent');
  });

  test('allow_cors_preflight lets a CORS preflight through without a session, and only when set', () => {
    const preflight = (allow: boolean) => {
      const compiled = compile(login(`{issuer_url: "https://id.example.com", client_id: app, client_secret: s, allow_cors_preflight: ${allow}}`));
      assert.ok(compiled.ok);
      const request = { method: 'OPTIONS', target: '/api', version: '1.1', scheme: 'https' as const, headers: ['Host', 'app.example.com', 'Access-Control-Request-Method', 'POST'], receivedAt: NOW };
      return evaluateHttpRequest(compiled.program, { connection: CONNECTION, request, buckets: new RateBuckets(), logins: codec });
    };
    assert.equal(preflight(true).login, undefined);
    assert.ok(preflight(false).login);
  });

  test('an idle clock older than a minute is moved with a renewed cookie', () => {
    const decision = evaluate(cookie(session(3600, 120)));
    assert.equal(decision.login, undefined);
    assert.equal(decision.setCookies.length, 1);
    assert.match(decision.setCookies[0]!, /^ngrok_session_oidc-[0-9a-f]{16}=v1\..*; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/);
  });

  test('the kept tokens are read by expressions; a session past userinfo_refresh_interval is to be refreshed', () => {
    const tokens = { idToken: 'id.tok.en', accessToken: 'at-1', refreshToken: 'rt-1' };
    const forward = `${OIDC}  - actions:\n      - type: add-headers\n        config: {headers: {x-at: "\${actions.ngrok.oidc.access_token}", x-it: "\${actions.ngrok.oidc.identity_token}", x-rt: "\${actions.ngrok.oidc.refresh_token}"}}\n`;
    const compiled = compile(forward);
    assert.ok(compiled.ok);
    const read = (value: string) => evaluateHttpRequest(compiled.program, { connection: CONNECTION, request: { method: 'GET', target: '/', version: '1.1', scheme: 'https', headers: ['Host', 'app.example.com', 'Cookie', value], receivedAt: NOW }, buckets: new RateBuckets(), logins: codec });
    const headers = read(cookie({ ...session(10, 10), ...tokens })).headers;
    assert.deepEqual(['x-at', 'x-it', 'x-rt'].map((name) => headers[headers.indexOf(name) + 1]), ['at-1', 'id.tok.en', 'rt-1']);
    const refreshing = loginOf(login(`{issuer_url: "https://id.example.com", client_id: app, client_secret: s, userinfo_refresh_interval: 5m}`));
    const now = Math.floor(NOW / 1000);
    const stale = (identityAt: number) => {
      const found = codec.lookup(refreshing, 'app.example.com', [`${sessionCookieName(refreshing)}=${codec.sealSession('app.example.com', refreshing, { ...session(3600, 10), identityAt })}`], now, true);
      assert.ok(found.ok);
      return found.stale;
    };
    assert.deepEqual([stale(now - 299), stale(now - 300)], [false, true]);
  });

  test('tampered, other-host, idle and too-old sessions all need a new login', () => {
    const good = cookie(session(10, 10));
    const tampered = good.slice(0, -3) + (good.endsWith('A') ? 'BBB' : 'AAA');
    assert.ok(evaluate(tampered).login);
    assert.ok(evaluate(cookie(session(10, 10), 'other.example.com')).login, 'a cookie sealed for another host does not open');
    const idle = evaluate(cookie(session(90_000, 90_000)));
    assert.ok(idle.login);
    const tooOld = evaluate(cookie(session(8 * 86400, 10)));
    assert.ok(tooOld.login);
  });
});

describe('split sessions', () => {
  test("logins `a` and `a_0` on one host: the pieces of one are never the other's cookie, both open, writing one clears none of the other", () => {
    const now = Math.floor(NOW / 1000);
    const named = (id: string) => loginOf(login(`{issuer_url: "https://id.example.com", client_id: app, client_secret: s, auth_id: ${id}}`));
    const [a, a0] = [named('a'), named('a_0')];
    const big = { ...session(10, 10), name: 'N'.repeat(4000), accessToken: 'at', refreshToken: 'rt' };
    const jar = new Map<string, string>();
    const header = () => [[...jar].map(([n, v]) => `${n}=${v}`).join('; ')];
    const apply = (setCookies: string[]) => {
      for (const line of setCookies) {
        const [name, value] = line.slice(0, line.indexOf(';')).split('=') as [string, string];
        if (/Max-Age=0;/.test(line)) jar.delete(name);
        else jar.set(name, value);
      }
    };
    apply(codec.sessionCookies('app.example.com', a, big, 3600, true, header()));
    assert.deepEqual([...jar.keys()], ['ngrok_session_a.0', 'ngrok_session_a.1'], 'a split session');
    apply(codec.sessionCookies('app.example.com', a0, session(10, 10), 3600, true, header()));
    apply(codec.sessionCookies('app.example.com', a0, big, 3600, true, header()));
    assert.deepEqual([...jar.keys()].sort(), ['ngrok_session_a.0', 'ngrok_session_a.1', 'ngrok_session_a_0.0', 'ngrok_session_a_0.1']);
    for (const which of [a, a0]) {
      const found = codec.lookup(which, 'app.example.com', header(), now, true);
      assert.ok(found.ok, `${which.key} opens`);
      assert.equal(found.session.name, big.name);
    }
    apply(codec.sessionCookies('app.example.com', a, session(10, 10), 3600, true, header()));
    assert.deepEqual([...jar.keys()].sort(), ['ngrok_session_a', 'ngrok_session_a_0.0', 'ngrok_session_a_0.1'], "a's pieces cleared when it fits one cookie again; a_0's kept");
  });
});

describe("burrow's cookies kept from the agent", () => {
  test('only ngrok_session_* and ngrok_login_* go; the rest keep their bytes; an emptied line is dropped', () => {
    const sent = withoutLoginCookies(['Host', 'a', 'Cookie', 'ngrok_session_k=v1.x; a=1;b= 2 ', 'X-Other', 'ngrok_session_k=kept', 'cookie', 'ngrok_login_k=p;ngrok_session_k.0=q', 'COOKIE', 'plain=1']);
    assert.deepEqual(sent, ['Host', 'a', 'Cookie', 'a=1;b= 2 ', 'X-Other', 'ngrok_session_k=kept', 'COOKIE', 'plain=1']);
  });
});

describe('the login flow', () => {
  const action = loginOf(login(`{issuer_url: "https://id.example.com", client_id: app, client_secret: ${SECRET}}`));
  const endpoint = { host: 'app.example.com', origin: 'https://app.example.com', secure: true };
  const discovery: ProviderFetch = async (url) => {
    if (url.endsWith('/.well-known/openid-configuration')) {
      const doc = { issuer: 'https://id.example.com', authorization_endpoint: 'https://id.example.com/auth', token_endpoint: 'https://id.example.com/token', jwks_uri: 'https://id.example.com/jwks' };
      return { status: 200, headers: {}, body: Buffer.from(JSON.stringify(doc)) };
    }
    throw new ProviderUnavailable('id.example.com: ECONNREFUSED');
  };

  test('begin: a redirect with PKCE (S256), state and nonce, and a sealed login cookie', async () => {
    const answer = await new EdgeLoginFlow(codec, discovery).begin(action, endpoint, '/inbox', false);
    assert.equal(answer.status, 302);
    const location = new URL(answer.headers[answer.headers.indexOf('Location') + 1]!);
    assert.equal(location.origin + location.pathname, 'https://id.example.com/auth');
    assert.equal(location.searchParams.get('redirect_uri'), 'https://app.example.com/ngrok/callback');
    assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(location.searchParams.get('scope'), 'openid profile email');
    assert.ok(location.searchParams.get('state') && location.searchParams.get('nonce'));
    assert.equal(location.searchParams.get('prompt'), null, 'only an explicit /ngrok/login forces a new authentication');
    assert.ok(!answer.headers.join('\n').includes(SECRET));
  });

  test('callback: a forged state is refused 403; a token endpoint that is down is a 502 naming the provider', async () => {
    const flow = new EdgeLoginFlow(codec, discovery);
    const begun = await flow.begin(action, endpoint, '/inbox', false);
    const cookie = begun.headers[begun.headers.indexOf('Set-Cookie') + 1]!.split(';')[0]!;
    const state = new URL(begun.headers[begun.headers.indexOf('Location') + 1]!).searchParams.get('state')!;
    const forged = await flow.callback([action], endpoint, new URLSearchParams({ state: 'forged', code: 'c' }), [cookie]);
    assert.equal(forged.status, 403);
    const down = await flow.callback([action], endpoint, new URLSearchParams({ state, code: 'c' }), [cookie]);
    assert.equal(down.status, 502);
    assert.match(down.body, /id\.example\.com could not be reached/);
    assert.equal(down.problem?.provider, 'id.example.com');
    const replayed = await flow.callback([action], endpoint, new URLSearchParams({ state, code: 'c' }), [cookie]);
    assert.equal(replayed.status, 403);
    assert.match(replayed.body, /already used/);
  });

  test('logout clears the session cookie and goes to redirect_path on this host only', () => {
    const flow = new EdgeLoginFlow(codec, discovery);
    const answer = flow.logout(action, endpoint, '//evil.example/');
    assert.equal(answer.headers[answer.headers.indexOf('Location') + 1], '/');
    assert.match(answer.headers[answer.headers.indexOf('Set-Cookie') + 1]!, /^ngrok_session_oidc-[0-9a-f]+=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax; Secure$/);
  });
});
