// @test-pass sqlite
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';
import { freeLoopbackPort, LoginBrowser, startOidcProvider, type TestProvider } from '../helpers/login-browser.js';

/**
 * Logins at the edge (IDENTITY.md §1–§2) end to end: a real `burrow serve`, the official SDK as
 * the agent, a real OpenID provider (oidc-provider) and a small OAuth 2.0 server of the test's
 * own named in OAUTH_PROVIDERS_FILE, driven by plain HTTP: redirects followed, the provider's
 * login and consent forms posted. The local server answers with the headers that reached it.
 */

const CLIENT = { id: 'burrow-app', secret: 'app-secret-never-logged' };
/** A client's own copies of the headers the OIDC / OAuth options set. */
const FORGED = { 'ngrok-auth-oauth-access-token': 'forged', 'ngrok-auth-oauth-refresh-token': 'forged', 'ngrok-auth-user-email': 'boss@example.com' };
let server: TrafficServer;
let session: ngrok.Session;
let token: string;
let provider: TestProvider;
let oauthServer: http.Server;
let local: http.Server;
let hanging: net.Server;
let untrusted: https.Server;
const held: net.Socket[] = [];
const listeners: ngrok.Listener[] = [];
const reached: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
/** What the test's OAuth server says of its user; `revoked`: it refuses the access token. */
const octo = { name: 'Octo Cat', revoked: false };

const host = (name: string) => `${name}.burrow.localhost`;
const url = (name: string, path: string) => `http://${host(name)}:${server.httpPort}${path}`;
const isCallbackOf = (name: string) => (next: string) => next.startsWith(url(name, '/ngrok/callback'));

// the store plays no part in a login
describe('edge logins', () => {
  before(async () => {
    const oauthPort = await freeLoopbackPort();
    oauthServer = startOAuthServer(oauthPort);
    const dir = mkdtempSync(join(tmpdir(), 'burrow-oauth-'));
    const base = `http://127.0.0.1:${oauthPort}`;
    // overriding github keeps GitHub's reading of the user: /user, then /user/emails for a private email
    writeFileSync(join(dir, 'providers.json'), JSON.stringify({ github: { authorize_url: `${base}/login/oauth/authorize`, token_url: `${base}/login/oauth/access_token`, userinfo_url: `${base}/user` } }));
    server = await startDataPlane({ env: { OAUTH_PROVIDERS_FILE: join(dir, 'providers.json') } });
    const names = ['app', 'sdk', 'down', 'hangs', 'gh', 'tokens', 'fresh', 'one', 'two', 'pair'];
    provider = await startOidcProvider({ ...CLIENT, redirectUris: names.map((name) => url(name, '/ngrok/callback')) });
    token = await createToken(server);
    session = await connectAgent(server, token);
    local = http.createServer((req, res) => {
      reached.push({ url: req.url!, headers: req.headers });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ url: req.url, headers: req.headers }));
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const policy = `
  on_http_request:
    - actions:
        - type: openid-connect
          config: {issuer_url: "${provider.issuer}", client_id: ${CLIENT.id}, client_secret: ${CLIENT.secret}}
    - actions:
        - type: add-headers
          config: {headers: {x-user-email: "\${actions.ngrok.oidc.identity.email}", x-user-name: "\${actions.ngrok.oidc.identity.name}"}}
  `;
    await bind('app', (b) => b.policy(policy));
    await bind('sdk', (b) => b.oidc(provider.issuer, CLIENT.id, CLIENT.secret, ['ann@example.com']));
    // a provider that takes connections and never answers
    hanging = net.createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const closedPort = await freeLoopbackPort();
    await bind('down', (b) => b.policy(oidcPolicy(`http://127.0.0.1:${closedPort}`)));
    await bind('hangs', (b) => b.policy(oidcPolicy(`http://127.0.0.1:${(hanging.address() as net.AddressInfo).port}`)));
    // an HTTPS provider whose self-signed certificate burrow has no reason to trust
    untrusted = selfSignedHttps(dir);
    await new Promise<void>((resolve) => untrusted.listen(0, '127.0.0.1', resolve));
    await bind('untrusted', (b) => b.policy(oidcPolicy(`https://127.0.0.1:${(untrusted.address() as net.AddressInfo).port}`)));
    await bind('gh', (b) => b.oauth('github', ['octo@example.com'], undefined, undefined, 'gh-client', 'gh-secret'));
    await bind('tokens', (b) => b.policy(`${oidcPolicy(provider.issuer)}${forwardTokens('oidc', ['identity_token', 'access_token', 'refresh_token'])}\n`));
    await bind('fresh', (b) => b.policy(`
  on_http_request:
    - actions:
        - type: openid-connect
          config: {issuer_url: "${provider.issuer}", client_id: ${CLIENT.id}, client_secret: ${CLIENT.secret}, userinfo_refresh_interval: 1s}
    - expressions: ["!actions.ngrok.oidc.identity.email.endsWith('@example.com')"]
      actions:
        - type: custom-response
          config: {status_code: 403, body: "example.com accounts only"}
    - actions:
        - type: add-headers
          config: {headers: {x-user-email: "\${actions.ngrok.oidc.identity.email}", x-refreshed: "\${actions.ngrok.oidc.userinfo_refreshed}"}}
  `));
    // two logins whose auth_ids differ by a `_0`: the pieces of `a`'s split session must not be `a_0`'s cookie
    const pairLogin = (id: string) => `  - actions:\n      - type: openid-connect\n        config: {issuer_url: "${provider.issuer}", client_id: ${CLIENT.id}, client_secret: ${CLIENT.secret}, auth_id: ${id}}\n`;
    await bind('pair', (b) => b.policy(`on_http_request:\n${pairLogin('a')}${pairLogin('a_0')}${forwardTokens('oidc', ['identity.email'])}\n`));
    await bind('one', (b) => b.policy(shared('burrow.localhost')));
    await bind('two', (b) => b.policy(shared('.Burrow.localhost')));
    await bind('ghr', (b) => b.policy(`on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: github, client_id: gh-client, client_secret: gh-secret, userinfo_refresh_interval: 1s}\n${forwardTokens('oauth', ['identity.name', 'userinfo_refreshed'])}\n`));
    await bind('ghp', (b) => b.policy(`on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: github, client_id: gh-client, client_secret: gh-secret}\n${forwardTokens('oauth', ['access_token', 'refresh_token'])}\n`));
  });

  after(async () => {
    for (const listener of listeners) await listener.close().catch(() => {});
    await session?.close().catch(() => {});
    await provider?.close();
    oauthServer?.closeAllConnections();
    oauthServer?.close();
    local?.close();
    for (const socket of held) socket.destroy();
    hanging?.close();
    untrusted?.close();
    await cleanupProcesses();
  });

  /** A rule forwarding `actions.ngrok.<kind>.<field>` as x-<field> headers. */
  function forwardTokens(kind: string, fields: string[]): string {
    return `  - actions:\n      - type: add-headers\n        config: {headers: {${fields.map((t) => `x-${t.replace('_', '-')}: "\${actions.ngrok.${kind}.${t}}"`).join(', ')}}}`;
  }

  /** A login whose session is named `shared` and set on `domain`. */
  function shared(domain: string): string {
    return `on_http_request:\n  - actions:\n      - type: openid-connect\n        config: {issuer_url: "${provider.issuer}", client_id: ${CLIENT.id}, client_secret: ${CLIENT.secret}, auth_id: shared, auth_cookie_domain: "${domain}"}\n${forwardTokens('oidc', ['identity.email'])}\n`;
  }

  function oidcPolicy(issuer: string): string {
    return `on_http_request:\n  - actions:\n      - type: openid-connect\n        config: {issuer_url: "${issuer}", client_id: ${CLIENT.id}, client_secret: ${CLIENT.secret}}\n`;
  }

  async function bind(name: string, configure: (builder: ngrok.HttpListenerBuilder) => ngrok.HttpListenerBuilder): Promise<void> {
    const builder = configure(session.httpEndpoint().domain(host(name)).scheme('HTTP'));
    const address = local.address() as net.AddressInfo;
    listeners.push(await builder.listenAndForward(`http://127.0.0.1:${address.port}`));
  }

  function json(body: string): { url: string; headers: Record<string, string> } {
    return JSON.parse(body) as { url: string; headers: Record<string, string> };
  }

  describe('openid-connect action', () => {
    test('a login through the provider reaches the agent with the identity; the cookie is sealed, HttpOnly and host-only', async () => {
      const browser = new LoginBrowser('ann');
      const first = await browser.request(url('app', '/inbox?folder=1'));
      assert.equal(first.status, 302);
      assert.ok(first.headers.location!.startsWith(`${provider.issuer}/auth?`), 'an unauthenticated request is sent to the provider');
      const page = await browser.browse(url('app', '/inbox?folder=1'));
      assert.equal(page.status, 200, page.body);
      const seen = json(page.body);
      assert.equal(seen.url, '/inbox?folder=1', 'back to the page asked for');
      assert.equal(seen.headers['x-user-email'], 'ann@example.com');
      assert.equal(seen.headers['x-user-name'], 'ANN');
      assert.ok(!reached.some((r) => r.url.startsWith('/ngrok/')), 'the login paths never reach the agent');
      const callback = page.visited.find((v) => v.includes('/ngrok/callback'))!;
      const set = await new LoginBrowser('ann').request(callback);
      assert.equal(set.status, 403, 'the callback without the login cookie is refused');
    });

    test("burrow's own cookies never reach the agent; the user's others do, byte for byte", async () => {
      const browser = new LoginBrowser('ann');
      assert.equal((await browser.browse(url('app', '/'))).status, 200);
      const at = `${host('app')}:${server.httpPort}`;
      const names = [...browser.jar.get(at)!.keys()];
      assert.ok(names.some((n) => n.startsWith('ngrok_session_')), 'logged in');
      const alone = await browser.request(url('app', '/alone'));
      assert.equal(alone.status, 200);
      assert.equal(json(alone.body).headers.cookie, undefined, 'a Cookie header of burrow\'s cookies only is dropped');
      // the jar's order: the user's cookie first, then the session, a stale login cookie, another of the user's
      const session = names.find((n) => n.startsWith('ngrok_session_'))!;
      const value = browser.cookie(at, session)!;
      browser.jar.set(at, new Map([['theme', 'dark'], [session, value], ['ngrok_login_oidc-0000000000000000', 'stale'], ['pref', '"a b"']]));
      const mixed = await browser.request(url('app', '/mixed'));
      assert.equal(mixed.status, 200, 'the session still opens');
      assert.equal(json(mixed.body).headers.cookie, 'theme=dark; pref="a b"');
    });

    test('forged state, replayed callback and a tampered cookie never reach the agent', async () => {
      const browser = new LoginBrowser('ann');
      const stopped = await browser.browse(url('app', '/'), isCallbackOf('app'));
      const callback = stopped.visited.at(-1)!;
      const forged = new URL(callback);
      forged.searchParams.set('state', 'forged-state');
      const before = reached.length;
      assert.equal((await browser.request(forged.toString())).status, 403);
      const loginCookies = [...browser.jar.get(`${host('app')}:${server.httpPort}`)!.entries()];
      const done = await browser.request(callback);
      assert.equal(done.status, 302);
      // the same callback again, with the login cookie it came with
      const replayer = new LoginBrowser('mallory');
      for (const [name, value] of loginCookies) replayer.setCookie(`${host('app')}:${server.httpPort}`, name, value);
      const replayed = await replayer.request(callback);
      assert.equal(replayed.status, 403);
      assert.match(replayed.body, /already used/);
      const sessionName = [...browser.jar.get(`${host('app')}:${server.httpPort}`)!.keys()].find((n) => n.startsWith('ngrok_session_'))!;
      const value = browser.cookie(`${host('app')}:${server.httpPort}`, sessionName)!;
      browser.setCookie(`${host('app')}:${server.httpPort}`, sessionName, value.slice(0, -4) + (value.endsWith('AAAA') ? 'BBBB' : 'AAAA'));
      const tampered = await browser.request(url('app', '/'));
      assert.equal(tampered.status, 302, 'a tampered session is a new login');
      assert.equal(reached.length, before, 'the agent saw none of these');
    });

    test('a WebSocket upgrade without a session is sent to /ngrok/login, not to the agent', async () => {
      const before = reached.length;
      const status = await new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: server.httpPort, path: '/socket', headers: { host: `${host('app')}:${server.httpPort}`, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' }, agent: false });
        req.once('response', (res) => {
          res.resume();
          resolve({ status: res.statusCode!, location: res.headers.location });
        });
        req.once('upgrade', () => reject(new Error('upgraded without a login')));
        req.once('error', reject);
        req.end();
      });
      assert.equal(status.status, 302);
      assert.match(status.location ?? '', /^\/ngrok\/login\?auth_id=oidc-[0-9a-f]{16}&redirect_path=%2Fsocket$/);
      assert.equal(reached.length, before);
    });

    test('logout clears the session; the next request needs a login again', async () => {
      const browser = new LoginBrowser('ann');
      assert.equal((await browser.browse(url('app', '/'))).status, 200);
      assert.equal((await browser.request(url('app', '/'))).status, 200);
      const out = await browser.request(url('app', '/ngrok/logout'));
      assert.equal(out.status, 200);
      assert.match(out.body, /logged out/);
      assert.match(String(out.headers['set-cookie']), /ngrok_session_[^=]+=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax/);
      assert.equal((await browser.request(url('app', '/'))).status, 302);
    });

    test('a provider that is down, hangs, or shows an untrusted certificate gives a 502 page naming it within 5 s', async () => {
      for (const name of ['down', 'hangs', 'untrusted']) {
        const started = Date.now();
        const page = await new LoginBrowser('ann').request(url(name, '/'));
        const elapsed = Date.now() - started;
        assert.equal(page.status, 502, `${name}: ${page.body}`);
        assert.match(page.body, /identity provider 127\.0\.0\.1:\d+ could not be reached/);
        assert.ok(elapsed < 5000, `${name} answered in ${elapsed} ms`);
      }
      const tls = /"host":"untrusted[^\n]*"reason":"127\.0\.0\.1:\d+: ([A-Z_]+)"/;
      // the log line may trail the page by a moment
      for (let i = 0; i < 40 && !tls.test(server.stdout.join('\n')); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      const log = [...server.stdout, ...server.stderr].join('\n');
      assert.match(log, /edge login failed/);
      assert.match(tls.exec(log)?.[1] ?? 'no log line', /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|ERR_TLS_CERT_ALTNAME_INVALID|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$/, 'TLS is verified');
      assert.ok(!log.includes(CLIENT.secret), 'the client secret is never logged');
    });
  });

  describe('the provider\'s tokens', () => {
    test('identity_token, access_token and refresh_token are kept in the session and read by expressions', async () => {
      const page = await new LoginBrowser('ann').browse(url('tokens', '/'));
      assert.equal(page.status, 200, page.body);
      const seen = json(page.body).headers;
      const claims = JSON.parse(Buffer.from(seen['x-identity-token']!.split('.')[1]!, 'base64url').toString()) as { sub: string; aud: string; iss: string };
      assert.deepEqual([claims.sub, claims.aud, claims.iss], ['ann', CLIENT.id, provider.issuer], 'the ID token of this login');
      const info = await fetch(`${provider.issuer}/me`, { headers: { authorization: `Bearer ${seen['x-access-token']}` } });
      assert.equal(info.status, 200, 'the access token is the one the provider issued');
      assert.equal(((await info.json()) as { email: string }).email, 'ann@example.com');
      const refreshed = await fetch(`${provider.issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: seen['x-refresh-token']! }).toString(),
      });
      assert.equal(refreshed.status, 200, 'the refresh token is the one the provider issued');
      const log = [...server.stdout, ...server.stderr].join('\n');
      for (const secret of [seen['x-identity-token']!, seen['x-access-token']!, seen['x-refresh-token']!]) assert.ok(!log.includes(secret), 'no token is logged');
    });

    test('the oauth action keeps the access token', async () => {
      const page = await new LoginBrowser('octo').browse(url('ghp', '/'));
      assert.equal(page.status, 200, page.body);
      assert.equal(json(page.body).headers['x-access-token'], 'gh-access-token');
      assert.equal(json(page.body).headers['x-refresh-token'], '', 'none was issued');
    });

    test('a large session is split over numbered cookies; a broken one and logout clear every piece', async () => {
      provider.accounts.set('big', { name: 'B'.repeat(4000) });
      const browser = new LoginBrowser('big');
      const page = await browser.browse(url('tokens', '/'));
      assert.equal(page.status, 200, page.body);
      const at = `${host('tokens')}:${server.httpPort}`;
      const pieces = [...browser.jar.get(at)!.keys()].filter((n) => n.startsWith('ngrok_session_')).sort();
      assert.ok(pieces.length >= 2 && pieces.every((n, i) => n.endsWith(`.${i}`)), `pieces: ${pieces.join(', ')}`);
      for (const name of pieces) assert.ok(name.length + browser.cookie(at, name)!.length < 4000, 'each piece fits a browser\'s cookie');
      assert.equal(json(page.body).headers.cookie, undefined, 'no piece reaches the agent');
      assert.ok(json(page.body).headers['x-identity-token']!.length > 100);
      // a piece altered: the session does not open, and the new login clears every piece
      browser.setCookie(at, pieces[1]!, browser.cookie(at, pieces[1]!)!.slice(0, -2) + 'xx');
      const broken = await browser.request(url('tokens', '/'));
      assert.equal(broken.status, 302);
      const clearedOnLogin = (broken.headers['set-cookie'] ?? []).filter((c) => /Max-Age=0/.test(c)).map((c) => c.split('=')[0]!);
      for (const name of pieces) assert.ok(clearedOnLogin.includes(name), `the new login clears ${name}`);
      const again = new LoginBrowser('big');
      assert.equal((await again.browse(url('tokens', '/'))).status, 200);
      const out = await again.request(url('tokens', '/ngrok/logout'));
      const cleared = (out.headers['set-cookie'] ?? []).filter((c) => /Max-Age=0/.test(c)).map((c) => c.split('=')[0]!);
      for (const name of pieces) assert.ok(cleared.includes(name), `logout clears ${name}`);
      assert.ok(![...again.jar.get(at)!.keys()].some((n) => n.startsWith('ngrok_session_')));
      assert.equal((await again.request(url('tokens', '/'))).status, 302);
    });
  });

  test('two logins with auth_ids `a` and `a_0`, both sessions split: both stay, and the user gets through', async () => {
    provider.accounts.set('wide', { name: 'W'.repeat(4000) });
    const browser = new LoginBrowser('wide');
    const page = await browser.browse(url('pair', '/'));
    assert.equal(page.status, 200, page.body);
    const at = `${host('pair')}:${server.httpPort}`;
    const names = [...browser.jar.get(at)!.keys()].filter((n) => n.startsWith('ngrok_session_')).sort();
    assert.deepEqual(names, ['ngrok_session_a.0', 'ngrok_session_a.1', 'ngrok_session_a_0.0', 'ngrok_session_a_0.1']);
    const again = await browser.request(url('pair', '/again'));
    assert.equal(again.status, 200, 'neither login starts again');
    assert.equal(json(again.body).headers['x-identity.email'], 'wide@example.com');
  });

  describe('userinfo_refresh_interval', () => {
    /** Asks `path` until the session is due its refresh (the answer is no longer `steady`'s), then follows a 307 once. */
    async function afterRefresh(browser: LoginBrowser, path: string, steady = 200) {
      for (let i = 0; i < 40; i++) {
        const page = await browser.request(url('fresh', path));
        if (page.status !== steady) return { first: page, then: page.status === 307 ? await browser.request(new URL(page.headers.location!, page.url).toString()) : undefined };
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error('no refresh within 4 s');
    }

    test('the user is read again: a changed email reaches the agent, one outside the rules gets 403, a refused token ends the session', async () => {
      const browser = new LoginBrowser('cora');
      const first = await browser.browse(url('fresh', '/a'));
      assert.equal(first.status, 200, first.body);
      assert.deepEqual([json(first.body).headers['x-user-email'], json(first.body).headers['x-refreshed']], ['cora@example.com', 'false']);

      provider.accounts.set('cora', { email: 'cora.new@example.com' });
      const moved = await afterRefresh(browser, '/b?x=1');
      assert.equal(moved.first.status, 307, 'read again without the user, then the same request again');
      assert.equal(moved.first.headers.location, '/b?x=1');
      assert.equal(moved.then?.status, 200, moved.then?.body);
      assert.deepEqual([json(moved.then!.body).url, json(moved.then!.body).headers['x-user-email'], json(moved.then!.body).headers['x-refreshed']], ['/b?x=1', 'cora.new@example.com', 'true']);
      const next = await browser.request(url('fresh', '/c'));
      if (next.status === 200) assert.equal(json(next.body).headers['x-refreshed'], 'false', 'userinfo_refreshed holds for the request after the refresh only');

      provider.accounts.set('cora', { email: 'cora@elsewhere.org' });
      const outside = await afterRefresh(browser, '/d');
      assert.equal(outside.first.status, 307);
      assert.equal(outside.then?.status, 403, 'the rules run on the fresh identity');
      assert.match(outside.then!.body, /example\.com accounts only/);

      const before = reached.length;
      provider.accounts.set('cora', null);
      const ended = await afterRefresh(browser, '/e', 403);
      assert.equal(ended.first.status, 302, 'the provider refuses the session\'s tokens: a new login');
      assert.ok(ended.first.headers.location!.startsWith(`${provider.issuer}/auth?`));
      assert.ok((ended.first.headers['set-cookie'] ?? []).some((c) => /^ngrok_session_[^=]+=; .*Max-Age=0/.test(c)), 'the session is cleared');
      assert.ok(![...browser.jar.get(`${host('fresh')}:${server.httpPort}`)!.keys()].some((n) => n.startsWith('ngrok_session_')));
      assert.equal(reached.length, before, 'the agent saw none of it');
    });

    test('oauth: the provider\'s user-info is read again; a revoked token ends the session', async () => {
      const browser = new LoginBrowser('octo');
      const first = await browser.browse(url('ghr', '/'));
      assert.equal(first.status, 200, first.body);
      assert.equal(json(first.body).headers['x-identity.name'], 'Octo Cat');
      octo.name = 'Octocat Renamed';
      try {
        let page = await browser.request(url('ghr', '/'));
        for (let i = 0; i < 40 && page.status === 200; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          page = await browser.request(url('ghr', '/'));
        }
        assert.equal(page.status, 307);
        const after = await browser.request(url('ghr', '/'));
        assert.deepEqual([json(after.body).headers['x-identity.name'], json(after.body).headers['x-userinfo-refreshed']], ['Octocat Renamed', 'true']);
        octo.revoked = true;
        for (let i = 0; i < 40 && page.status !== 302; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          page = await browser.request(url('ghr', '/'));
        }
        assert.equal(page.status, 302, 'a new login');
        assert.match(page.headers.location ?? '', /\/login\/oauth\/authorize\?/);
      } finally {
        Object.assign(octo, { name: 'Octo Cat', revoked: false });
      }
    });

    test('a provider that cannot be reached at the refresh is a 502 page, never the stale identity', async () => {
      // what the refresh would meet: the user-info endpoint down; the session is made for it by a login first
      const browser = new LoginBrowser('dave');
      assert.equal((await browser.browse(url('fresh', '/'))).status, 200);
      await provider.close();
      try {
        let page = await browser.request(url('fresh', '/'));
        for (let i = 0; i < 40 && page.status === 200; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          page = await browser.request(url('fresh', '/'));
        }
        assert.equal(page.status, 502, page.body);
        assert.match(page.body, /identity provider 127\.0\.0\.1:\d+ could not be reached/);
      } finally {
        await provider.listen();
      }
    });
  });

  describe('auth_cookie_domain', () => {
    test('the session cookie is set on the domain and opens on another endpoint under it with the same login', async () => {
      const browser = new LoginBrowser('erin');
      const page = await browser.browse(url('one', '/'));
      assert.equal(page.status, 200, page.body);
      const at = `${host('one')}:${server.httpPort}`;
      const value = browser.cookie(at, 'ngrok_session_shared')!;
      assert.ok(value, 'a session named by the auth_id');
      // what a browser does with Domain=burrow.localhost: the same cookie goes to two.burrow.localhost
      const other = new LoginBrowser('nobody');
      other.setCookie(`${host('two')}:${server.httpPort}`, 'ngrok_session_shared', value);
      const there = await other.request(url('two', '/'));
      assert.equal(there.status, 200, 'the seal binds the domain, not the host');
      assert.equal(json(there.body).headers['x-identity.email'], 'erin@example.com');
      const out = await other.request(url('two', '/ngrok/logout?auth_id=shared'));
      assert.ok((out.headers['set-cookie'] ?? []).some((c) => /^ngrok_session_shared=; Path=\/; Domain=burrow\.localhost; Max-Age=0/.test(c)), 'logout clears it on the domain');
    });

    test('the Set-Cookie names the domain', async () => {
      const browser = new LoginBrowser('erin');
      const stopped = await browser.browse(url('one', '/'), isCallbackOf('one'));
      const done = await browser.request(stopped.visited.at(-1)!);
      assert.equal(done.status, 302);
      assert.ok((done.headers['set-cookie'] ?? []).some((c) => /^ngrok_session_shared=v1\.[^;]+; Path=\/; Domain=burrow\.localhost; Max-Age=\d+; HttpOnly; SameSite=Lax$/.test(c)), String(done.headers['set-cookie']));
    });

    test('a domain that is not the endpoint\'s host or a parent of it is refused at bind', async () => {
      const builder = session.httpEndpoint().domain(host('wrong')).scheme('HTTP').policy(shared('example.com'));
      await assert.rejects(builder.listen(), /auth_cookie_domain "example\.com" must be the endpoint's host "wrong\.burrow\.localhost" or a parent domain of it/);
    });
  });

  describe('OIDC option (the SDK\'s .oidc())', () => {
    test('a user in allow_emails reaches the agent with ngrok-auth-user-* headers; another one is refused 403', async () => {
      const ann = await new LoginBrowser('ann').browse(url('sdk', '/'));
      assert.equal(ann.status, 200, ann.body);
      assert.equal(json(ann.body).headers['ngrok-auth-user-email'], 'ann@example.com');
      const before = reached.length;
      const bob = await new LoginBrowser('bob').browse(url('sdk', '/'));
      assert.equal(bob.status, 403);
      assert.match(bob.body, /bob@example\.com is not allowed/);
      assert.equal(reached.length, before);
    });

    test("the user's access and refresh tokens reach the agent in the reference's headers, never a client's own", async () => {
      const browser = new LoginBrowser('ann');
      assert.equal((await browser.browse(url('sdk', '/'))).status, 200);
      const page = await browser.request(url('sdk', '/again'), 'GET', undefined, FORGED);
      assert.equal(page.status, 200, page.body);
      const seen = json(page.body).headers;
      assert.notEqual(seen['ngrok-auth-user-email'], 'boss@example.com');
      assert.ok(seen['ngrok-auth-oauth-refresh-token'] && seen['ngrok-auth-oauth-refresh-token'] !== 'forged', 'the refresh token the provider issued');
      const info = await fetch(`${provider.issuer}/me`, { headers: { authorization: `Bearer ${seen['ngrok-auth-oauth-access-token']}` } });
      assert.equal(info.status, 200, 'the access token is the one the provider issued');
      assert.equal(((await info.json()) as { email: string }).email, 'ann@example.com');
    });

    test('a bind without client credentials is refused with the reason', async () => {
      const builder = session.httpEndpoint().domain(host('nocreds')).scheme('HTTP').oauth('google');
      await assert.rejects(builder.listen(), /no managed apps/);
    });
  });

  describe('oauth action with a provider from OAUTH_PROVIDERS_FILE', () => {
    test('GitHub-style login: code exchange with PKCE, /user then /user/emails for the private email', async () => {
      const page = await new LoginBrowser('octo').browse(url('gh', '/repo'));
      assert.equal(page.status, 200, page.body);
      const seen = json(page.body);
      assert.equal(seen.headers['ngrok-auth-user-email'], 'octo@example.com');
      assert.equal(seen.headers['ngrok-auth-user-id'], '42');
      assert.equal(seen.headers['ngrok-auth-user-name'], 'Octo Cat');
    });

    test('the OAuth option sends the access token; no refresh token was issued, so that header is absent, a forged one too', async () => {
      const browser = new LoginBrowser('octo');
      assert.equal((await browser.browse(url('gh', '/'))).status, 200);
      const seen = json((await browser.request(url('gh', '/again'), 'GET', undefined, FORGED)).body).headers;
      assert.equal(seen['ngrok-auth-oauth-access-token'], 'gh-access-token');
      assert.equal(seen['ngrok-auth-oauth-refresh-token'], undefined);
      assert.equal(seen['ngrok-auth-user-email'], 'octo@example.com');
    });
  });
});

/** A small OAuth 2.0 server: authorizes at once, checks the client and PKCE at the token endpoint, keeps the email private. */
function startOAuthServer(port: number): http.Server {
  const codes = new Map<string, { challenge: string; redirect: string }>();
  const server = http.createServer((req, res) => {
    const target = new URL(req.url!, 'http://x');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (target.pathname === '/login/oauth/authorize') {
      const code = `code-${codes.size + 1}`;
      codes.set(code, { challenge: target.searchParams.get('code_challenge') ?? '', redirect: target.searchParams.get('redirect_uri') ?? '' });
      const back = new URL(target.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', target.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (target.pathname === '/login/oauth/access_token') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const issued = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const pkce = createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url');
        if (!issued || form.get('client_id') !== 'gh-client' || form.get('client_secret') !== 'gh-secret' || pkce !== issued.challenge || form.get('redirect_uri') !== issued.redirect) {
          return send(200, { error: 'bad_verification_code' });
        }
        send(200, { access_token: 'gh-access-token', token_type: 'bearer' });
      });
      return;
    }
    if (req.headers.authorization !== 'Bearer gh-access-token' || octo.revoked) return send(401, { message: 'Bad credentials' });
    if (target.pathname === '/user') return send(200, { id: 42, login: 'octo', name: octo.name, email: null });
    if (target.pathname === '/user/emails') return send(200, [{ email: 'other@example.com', primary: false, verified: true }, { email: 'octo@example.com', primary: true, verified: true }]);
    send(404, {});
  });
  server.listen(port, '127.0.0.1');
  return server;
}

/** An HTTPS server on 127.0.0.1 with a fresh self-signed certificate (openssl), serving a discovery document. */
function selfSignedHttps(dir: string): https.Server {
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]);
  assert.equal(made.status, 0, String(made.stderr));
  return https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  });
}
