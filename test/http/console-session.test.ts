import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConsoleSessions, type ActiveConsoleSession, type ConsoleSessionRecord } from '../../src/domain/console/sessions.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

interface WhoAmI {
  csrf_token: string;
  principal: { id: string; admin: boolean };
}

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

async function signIn(apiKey: string): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const response = await t.call({ method: 'POST', url: '/console/session', key: null, version: false, body: { api_key: apiKey } });
  assert.equal(response.statusCode, 201, response.body);
  const setCookie = String(response.headers['set-cookie']);
  return { cookie: setCookie.split(';')[0]!, csrf: json<WhoAmI>(response).csrf_token, setCookie };
}

/** A REST call authenticated by the console's cookie only. */
function withCookie(cookie: string, method: 'GET' | 'POST' | 'DELETE' | 'PATCH', url: string, csrf?: string, body?: unknown) {
  return t.call({ method, url, key: null, headers: { cookie, ...(csrf ? { 'x-csrf-token': csrf } : {}) }, ...(body === undefined ? {} : { body }) });
}

describe('console sessions', () => {
  it('exchanges an API key for an HttpOnly, SameSite=Strict cookie; the key is never in it', async () => {
    const { setCookie, cookie, csrf } = await signIn(t.admin.key);
    assert.match(setCookie, /^burrow_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    assert.ok(!setCookie.includes(t.admin.key));
    assert.ok(csrf.length >= 24);
    const who = json<WhoAmI>(await withCookie(cookie, 'GET', '/console/session'));
    assert.equal(who.principal.id, t.admin.principal.id);
    assert.equal(who.csrf_token, csrf);
  });

  it('refuses a bad key with the API’s own errors', async () => {
    const response = await t.call({ method: 'POST', url: '/console/session', key: null, version: false, body: { api_key: 'nope' } });
    expectError(response, 401, 'ERR_NGROK_202');
    const unknown = `${t.admin.key.slice(0, 28)}${'x'.repeat(21)}`;
    expectError(await t.call({ method: 'POST', url: '/console/session', key: null, version: false, body: { api_key: unknown } }), 401, 'ERR_NGROK_203');
    expectError(await t.call({ method: 'POST', url: '/console/session', key: null, version: false, body: {} }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'GET', url: '/console/session', key: null, version: false }), 401, undefined);
  });

  it('authenticates REST calls by the cookie; a change needs the CSRF header', async () => {
    const { cookie, csrf } = await signIn(t.admin.key);
    assert.equal((await withCookie(cookie, 'GET', '/credentials')).statusCode, 200);
    expectError(await withCookie(cookie, 'POST', '/credentials', undefined, {}), 403, undefined);
    expectError(await withCookie(cookie, 'POST', '/credentials', 'x'.repeat(csrf.length), {}), 403, undefined);
    const created = await withCookie(cookie, 'POST', '/credentials', csrf, { description: 'from the console' });
    assert.equal(created.statusCode, 201, created.body);
    // an Authorization header wins over the cookie
    expectError(await t.call({ method: 'GET', url: '/credentials', key: 'bad', headers: { cookie } }), 401, 'ERR_NGROK_202');
  });

  it('revoking the key signs its sessions out; other sessions stay', async () => {
    const made = json<{ id: string; token: string }>(await t.call({ method: 'POST', url: '/api_keys', body: {} }));
    const doomed = await signIn(made.token);
    const other = await signIn(t.admin.key);
    assert.equal((await withCookie(doomed.cookie, 'GET', '/credentials')).statusCode, 200);
    assert.equal((await withCookie(other.cookie, 'DELETE', `/api_keys/${made.id}`, other.csrf)).statusCode, 204);
    expectError(await withCookie(doomed.cookie, 'GET', '/credentials'), 401, undefined);
    expectError(await withCookie(doomed.cookie, 'GET', '/console/session'), 401, undefined);
    assert.equal((await withCookie(other.cookie, 'GET', '/credentials')).statusCode, 200);
  });

  it('signing in again ends the browser’s previous session', async () => {
    const first = await signIn(t.admin.key);
    const again = await t.call({ method: 'POST', url: '/console/session', key: null, version: false, headers: { cookie: first.cookie }, body: { api_key: t.admin.key } });
    assert.equal(again.statusCode, 201);
    expectError(await withCookie(first.cookie, 'GET', '/credentials'), 401, undefined);
    assert.equal((await withCookie(String(again.headers['set-cookie']).split(';')[0]!, 'GET', '/credentials')).statusCode, 200);
  });

  it('signs out: the cookie is cleared and the session no longer works', async () => {
    const { cookie, csrf } = await signIn(t.admin.key);
    expectError(await withCookie(cookie, 'DELETE', '/console/session'), 403, undefined);
    const out = await withCookie(cookie, 'DELETE', '/console/session', csrf);
    assert.equal(out.statusCode, 204);
    assert.match(String(out.headers['set-cookie']), /Max-Age=0/);
    expectError(await withCookie(cookie, 'GET', '/credentials'), 401, undefined);
  });

  it('counts sign-ins against the account’s rate limit', async () => {
    const limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: '2' });
    try {
      const signInOnce = () => limited.call({ method: 'POST', url: '/console/session', key: null, version: false, body: { api_key: limited.admin.key } });
      assert.equal((await signInOnce()).statusCode, 201);
      assert.equal((await signInOnce()).statusCode, 201);
      expectError(await signInOnce(), 429, 'ERR_NGROK_226');
    } finally {
      await limited.close();
    }
  });

  it('sets Secure when the public URL is HTTPS', async () => {
    const secure = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
    try {
      const response = await secure.call({ method: 'POST', url: '/console/session', key: null, version: false, body: { api_key: secure.admin.key } });
      assert.equal(response.statusCode, 201, response.body);
      assert.match(String(response.headers['set-cookie']), /; Secure$/);
    } finally {
      await secure.close();
    }
  });

  it('serves the console with a strict CSP, and nothing outside its directory', async () => {
    const page = await t.call({ method: 'GET', url: '/console/', key: null, version: false });
    assert.ok(page.statusCode === 200 || page.statusCode === 503, `${page.statusCode}`);
    if (page.statusCode === 200) {
      const csp = String(page.headers['content-security-policy']);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.ok(!page.body.includes('<script>'), 'no inline script');
    }
    assert.equal((await t.call({ method: 'GET', url: '/console', key: null, version: false })).headers.location, '/console/');
    for (const url of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2fpackage.json', '/console/nothing.js']) {
      assert.equal((await t.call({ method: 'GET', url, key: null, version: false })).statusCode, 404, url);
    }
  });

  it('CONSOLE=off: no console routes, and the cookie authenticates nothing', async () => {
    const { cookie } = await signIn(t.admin.key);
    const off = await createTestApp({ CONSOLE: 'off' });
    try {
      expectError(await off.call({ method: 'GET', url: '/console/', key: null, version: false }), 404, undefined);
      expectError(await off.call({ method: 'POST', url: '/console/session', key: null, version: false, body: { api_key: t.admin.key } }), 404, undefined);
      expectError(await off.call({ method: 'GET', url: '/credentials', key: null, headers: { cookie } }), 401, 'ERR_NGROK_200');
    } finally {
      await off.close();
    }
  });
});

describe('ConsoleSessions idle expiry', () => {
  it('ends a session unused for longer than the idle time, and keeps a used one alive', async () => {
    const rows = new Map<string, ConsoleSessionRecord>();
    const principal = t.admin.principal;
    const repository = {
      insert: async (row: ConsoleSessionRecord) => void rows.set(row.idHash, row),
      findActive: async (idHash: string): Promise<ActiveConsoleSession | undefined> => {
        const row = rows.get(idHash);
        return row && { csrfToken: row.csrfToken, lastUsedMs: row.lastUsedMs, principal };
      },
      touch: async (idHash: string, lastUsedMs: number) => void rows.set(idHash, { ...rows.get(idHash)!, lastUsedMs }),
      delete: async (idHash: string) => void rows.delete(idHash),
      deleteIdleSince: async () => {},
    };
    let now = 1_000_000;
    const sessions = new ConsoleSessions(repository, () => principal, 60_000, () => now);
    const kept = await sessions.signIn(t.admin.key);
    const idle = await sessions.signIn(t.admin.key);
    now += 40_000;
    await sessions.authenticate(kept.sessionId, false, undefined);
    now += 40_000;
    assert.equal((await sessions.authenticate(kept.sessionId, false, undefined)).principal, principal);
    await assert.rejects(sessions.authenticate(idle.sessionId, false, undefined), /session has ended/);
  });
});

