// @test-pass sqlite
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { chromium, type Browser } from 'playwright-core';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';
import { startOidcProvider, type TestProvider } from '../helpers/login-browser.js';

/**
 * A whole edge login in Debian's Chromium (IDENTITY.md §4): a real `burrow serve`, the SDK as the
 * agent, oidc-provider as the OpenID provider. Redirect, login form, consent, callback, cookie,
 * the local server reached, logout; and a user outside allow_emails refused.
 */

const CHROMIUM = '/usr/bin/chromium';
const skip = (existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
const CLIENT = { id: 'browser-app', secret: 'browser-app-secret' };

let server: TrafficServer;
let provider: TestProvider;
let session: ngrok.Session;
let local: http.Server;
let browser: Browser;

const url = (name: string, path: string) => `http://${name}.burrow.localhost:${server.httpPort}${path}`;

describe('an edge login in Chromium', { skip }, () => {
  before(async () => {
    server = await startDataPlane();
    provider = await startOidcProvider({ ...CLIENT, redirectUris: [url('web', '/ngrok/callback'), url('staff', '/ngrok/callback')] });
    session = await connectAgent(server, await createToken(server));
    local = http.createServer((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<h1>Hello ${String(req.headers['x-user-email'] ?? req.headers['ngrok-auth-user-email'] ?? 'nobody')}</h1>`);
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const forward = `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;
    const policy = `on_http_request:
  - actions:
      - type: openid-connect
        config: {issuer_url: "${provider.issuer}", client_id: ${CLIENT.id}, client_secret: ${CLIENT.secret}}
      - type: add-headers
        config: {headers: {x-user-email: "\${actions.ngrok.oidc.identity.email}"}}
`;
    await session.httpEndpoint().domain('web.burrow.localhost').scheme('HTTP').policy(policy).listenAndForward(forward);
    await session.httpEndpoint().domain('staff.burrow.localhost').scheme('HTTP').oidc(provider.issuer, CLIENT.id, CLIENT.secret, ['ann@example.com']).listenAndForward(forward);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // *.burrow.localhost is burrow on loopback, whatever the resolver says
      args: ['--host-resolver-rules=MAP *.burrow.localhost 127.0.0.1', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])],
    });
  });

  after(async () => {
    await browser?.close();
    await session?.close().catch(() => {});
    await provider?.close();
    local?.close();
    await cleanupProcesses();
  });

  it('logs in through the provider, reaches the local server, and logs out', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url('web', '/hello'));
    assert.ok(page.url().startsWith(provider.issuer), `at the provider: ${page.url()}`);
    await page.locator('input[name=login]').fill('ann');
    await page.locator('input[name=password]').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Hello ann@example.com' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/hello');
    const cookies = await context.cookies(url('web', '/'));
    const sessionCookie = cookies.find((c) => c.name.startsWith('ngrok_session_'));
    assert.ok(sessionCookie, 'a session cookie');
    assert.equal(sessionCookie.httpOnly, true);
    assert.equal(sessionCookie.sameSite, 'Lax');
    assert.equal(sessionCookie.domain, 'web.burrow.localhost', 'host-only');
    assert.ok(!cookies.some((c) => c.name.startsWith('ngrok_login_')), 'the login cookie is gone after the callback');

    await page.goto(url('web', '/ngrok/logout'));
    await page.getByText('You are logged out').waitFor();
    assert.ok(!(await context.cookies(url('web', '/'))).some((c) => c.name.startsWith('ngrok_session_')));
    // the next visit goes through the provider again (its own session may log the user in at once)
    const visited: string[] = [];
    page.on('request', (request) => visited.push(request.url()));
    await page.goto(url('web', '/hello'));
    assert.ok(visited.some((v) => v.startsWith(`${provider.issuer}/auth`)), 'a new login after logout');
    await context.close();
  });

  it('refuses a user outside allow_emails with a 403 page', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url('staff', '/'));
    await page.locator('input[name=login]').fill('bob');
    await page.locator('input[name=password]').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    const [response] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(url('staff', '/')) && !r.url().includes('/ngrok/')), page.getByRole('button', { name: 'Continue' }).click()]);
    assert.equal(response.status(), 403);
    await page.getByText('bob@example.com is not allowed').waitFor();
    await context.close();
  });
});
