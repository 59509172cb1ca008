// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { newId } from '../../src/domain/ids.js';
import { openStore } from '../../src/storage/db.js';
import { SqlInspectionRepository } from '../../src/storage/repositories/inspection.js';
import { startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { PROJECT_ROOT, api, cleanupProcesses } from '../helpers/server-process.js';

/**
 * The console in Debian's Chromium against a real `burrow serve` and a real SDK agent
 * (CONSOLE.md §4). Screenshots of every page, desktop and phone, go to test-output/console/.
 */

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(PROJECT_ROOT, 'test-output', 'console');
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
const skip = (existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);

let server: DataPlaneServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let agent: ChildProcess | undefined;
const agentLines: string[] = [];

async function shoot(name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: join(SHOTS, `${name}-1280.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(SHOTS, `${name}-390.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
}

async function open(path: string, heading: string): Promise<void> {
  await page.goto(`${server.baseUrl}/console/#/${path}`);
  await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
}

async function signIn(key: string): Promise<void> {
  await page.goto(`${server.baseUrl}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

describe('the console in Chromium', { skip }, () => {
  before(async () => {
    // Built every run (a few seconds), so the test never drives a stale console.
    const build = spawnSync(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '--config', 'console/vite.config.ts'], { cwd: PROJECT_ROOT, stdio: 'inherit' });
    assert.equal(build.status, 0, 'vite build of the console');
    mkdirSync(SHOTS, { recursive: true });
    server = await startDataPlaneServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.baseUrl });
    page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.dismiss());
  });

  after(async () => {
    agent?.kill('SIGKILL');
    await browser?.close();
    await cleanupProcesses();
  });

  it('is served with a strict CSP and refuses a wrong key in place', async () => {
    const response = await page.goto(`${server.baseUrl}/console/`);
    const csp = response!.headers()['content-security-policy']!;
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    await page.getByLabel('API key').fill(`${server.apiKey.slice(0, 28)}${'x'.repeat(21)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'ERR_NGROK_203' }).waitFor();
    await shoot('sign-in');
  });

  it('signs in with the API key; the key is not kept in the browser', async () => {
    await signIn(server.apiKey);
    const cookies = await context.cookies();
    const session = cookies.find((cookie) => cookie.name === 'burrow_console')!;
    assert.ok(session.httpOnly);
    assert.equal(session.sameSite, 'Strict');
    // Expressions as strings: they run in the page, whose globals Node's types do not know.
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie');
    assert.ok(!stored.includes(server.apiKey));
    assert.ok(!cookies.some((cookie) => cookie.value.includes(server.apiKey)));
  });

  it('creates a credential (an XSS payload as its description, shown as text), copies its token, and the agent connects with it', async () => {
    await open('credentials', 'Tunnel credentials');
    await page.getByLabel('Description').fill(XSS);
    await page.getByRole('button', { name: 'Create credential' }).click();
    const secret = await page.getByTestId('secret').textContent();
    assert.match(secret!, /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/);
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    const token = await page.evaluate<string>('navigator.clipboard.readText()');
    assert.equal(token, secret);
    const snippets = await page.locator('pre code').allTextContents();
    assert.ok(snippets.some((text) => text.includes(`.serverAddr('${server.plane.serverAddr}')`) && text.includes(token)));
    assert.ok(snippets.some((text) => text.includes(`server_addr: ${server.plane.serverAddr}`) && text.includes(`authtoken: ${token}`)));

    const cell = page.locator('td.user-text').filter({ hasText: '<img' }).first();
    assert.equal(await cell.textContent(), XSS);
    assert.equal(await page.locator('td.user-text img, td.user-text script').count(), 0);
    assert.equal(await page.evaluate<unknown>('window.__xss'), undefined);
    await shoot('credentials');

    const config = JSON.stringify({ serverAddr: server.plane.serverAddr, caPath: join(server.plane.tlsDir, 'ca.pem'), token });
    agent = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'test/browser/stoppable-agent.ts'), config], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    agent.stdout!.on('data', (chunk: Buffer) => agentLines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    await waitFor('the agent’s endpoint', () => agentLines.some((line) => line.includes('"url"')), 30_000);
  });

  it('shows the agent, its endpoint and tunnel, and the overview counts it', async () => {
    await open('agents', 'Agents');
    await waitFor(
      'the agent in the list',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return (await page.locator('tr[data-session]').count()) === 1;
      },
      15_000,
    );
    await shoot('agents');
    await open('endpoints', 'Endpoints');
    await page.getByRole('link', { name: /^https:\/\// }).first().waitFor();
    await shoot('endpoints');
    await open('overview', 'Overview');
    await page.getByTestId('agents-online').filter({ hasText: '1' }).waitFor();
    await page.locator('.uplot').first().waitFor();
  });

  it('inspector: capture settings saved; a captured request opens, its hostile header shown as text, and is replayed', async () => {
    const endpoint = (await api(server, 'GET', '/endpoints')).body.endpoints[0];
    const store = openStore(server.databaseUrl, { poolSize: 1 });
    try {
      const accountId = server.bootstrap!.accountId;
      const exchange = {
        method: 'GET',
        path: '/search?q=1',
        status: 200,
        durationMs: 3,
        clientIp: '192.0.2.10',
        requestHeaders: { 'x-evil': [XSS], authorization: ['[REDACTED]'] },
        responseHeaders: { 'content-type': ['text/plain'] },
        actions: [],
        responseBody: { data: Buffer.from('hello').toString('base64'), length: 5, truncated: false },
      };
      await new SqlInspectionRepository(store).insertBatch([
        { id: newId('req').id, accountId, endpointId: endpoint.id, createdAt: new Date().toISOString().slice(0, 19) + 'Z', ...exchange },
      ]);
    } finally {
      await store.close();
    }
    await open('inspector', 'Traffic inspector');
    await page.getByRole('combobox', { name: 'Capture' }).selectOption('heads');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    assert.equal((await api(server, 'GET', '/traffic_inspection')).body.capture, 'heads');
    await page.getByRole('combobox', { name: 'Endpoint' }).selectOption(endpoint.id);
    await page.getByText('GET /search?q=1').click();
    const cell = page.locator('td.user-text').filter({ hasText: '<img' }).first();
    assert.equal(await cell.textContent(), XSS);
    assert.equal(await page.locator('td img, td script').count(), 0);
    assert.equal(await page.evaluate<unknown>('window.__xss'), undefined);
    await page.getByText('Response body: 5 bytes').click();
    await page.locator('pre code').filter({ hasText: 'hello' }).waitFor();
    await shoot('inspector');
    // replayed through the endpoint for real (the agent's local service is down: a 502, recorded)
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.getByRole('status').filter({ hasText: /Replayed as req_/ }).waitFor();
    await waitFor('the replay listed', async () => (await page.getByText('GET /search?q=1').count()) === 2, 10_000);
  });

  it('edits a TLS edge’s policy: the server’s error shown inline, then a valid one saved', async () => {
    await open('groups', 'Tunnel groups');
    await page.getByLabel('Labels (key=value, one a line)').fill('app=web');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.locator('tbody tr').first().waitFor();
    await shoot('groups');

    await open('edges', 'TLS edges');
    await page.getByLabel('Hostports (one a line)').fill('app.example.com:443');
    await page.getByRole('button', { name: 'Create edge' }).click();
    await page.getByRole('button', { name: 'Edit policy' }).click();
    const editor = page.getByLabel('Traffic policy (YAML or JSON)');
    await editor.fill('on_tcp_connect:\n  - actions:\n      - type: no-such-action\n');
    // Validated as you type, through the API, before anything is saved.
    await page.getByTestId('policy-check').getByRole('alert').filter({ hasText: 'ERR_NGROK_2201' }).waitFor();
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('alert').filter({ hasText: 'ERR_NGROK_2201' }).waitFor();
    await shoot('edges-policy-error');
    await editor.fill('on_tcp_connect:\n  - expressions: ["conn.client_ip == \'192.0.2.1\'"]\n    actions:\n      - type: deny\n');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('status').filter({ hasText: 'Policy saved.' }).waitFor();
    assert.equal(await page.getByRole('alert').count(), 0);
    await page.getByTestId('policy-check').getByText('Valid.').waitFor();
    await shoot('edges');

    // Try it: the server's policy test, its report shown as text.
    const tryIt = page.getByRole('form', { name: /^Try the policy of / });
    await tryIt.getByLabel('Client IP (empty: yours)').fill('192.0.2.1');
    await tryIt.getByRole('button', { name: 'Try it' }).click();
    const result = page.getByTestId('policy-try-result');
    await result.getByRole('status').filter({ hasText: 'Refused' }).waitFor();
    const report = (await result.locator('pre').textContent())!;
    assert.match(report, /connection from 192\.0\.2\.1:50000 to app\.example\.com:443/);
    assert.match(report, /Rule 1: matched\n {2}action 1 deny: connection closed\nVerdict: closed by rule 1, action 1 \(deny\)/);
    await tryIt.getByLabel('Client IP (empty: yours)').fill('198.51.100.1');
    await tryIt.getByLabel('HTTP request (optional), e.g. GET /path?q=1').fill('GET /hello');
    await tryIt.getByRole('button', { name: 'Try it' }).click();
    await result.getByRole('status').filter({ hasText: 'Allowed' }).waitFor();
    assert.match((await result.locator('pre').textContent())!, /Request to the agent:\n {2}GET \/hello HTTP\/1\.1\n {2}Host: app\.example\.com/);
    await tryIt.getByLabel('Client IP (empty: yours)').fill('not an address');
    await tryIt.getByRole('button', { name: 'Try it' }).click();
    await tryIt.getByRole('alert').filter({ hasText: 'connection.client_ip' }).waitFor();
    await tryIt.getByLabel('Client IP (empty: yours)').fill('192.0.2.1');
    await tryIt.getByLabel('HTTP request (optional), e.g. GET /path?q=1').fill('');
    await tryIt.getByRole('button', { name: 'Try it' }).click();
    await result.getByRole('status').filter({ hasText: 'Refused' }).waitFor();
    await shoot('edges-try-it');
  });

  it('overview: the last hour’s charts, summed over instances, count the requests just sent through the endpoint', async () => {
    await open('overview', 'Overview');
    await page.locator('.uplot').nth(2).waitFor();
    assert.equal(await page.locator('.uplot').count(), 3);
    // Each instance writes its counts every 10 s and the page reads them every 10 s.
    await page.getByTestId('requests-hour').filter({ hasText: /^[1-9]\d*$/ }).waitFor({ timeout: 40_000 });
    const label = (await page.getByRole('img', { name: /^Connections and requests per minute/ }).getAttribute('aria-label'))!;
    assert.match(label, /HTTP requests [1-9]/);
    await shoot('overview');
  });

  it('stops the agent from the agents page', async () => {
    await open('agents', 'Agents');
    const row = page.locator('tr[data-session]');
    await row.getByRole('button', { name: /^Stop / }).click();
    await page.getByRole('button', { name: 'Stop the agent' }).click();
    await page.getByRole('status').filter({ hasText: 'Sent stop' }).waitFor();
    await waitFor('the agent to exit', () => agent!.exitCode === 0, 10_000);
    assert.ok(agentLines.some((line) => line.includes('"stopped"')));
    await waitFor(
      'the agent gone from the list',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(300);
        return (await page.locator('tr[data-session]').count()) === 0;
      },
      15_000,
    );
  });

  it('revoking the key a session was made with signs that session out', async () => {
    await open('api-keys', 'API keys');
    await page.getByLabel('Description').fill('for a second sign-in');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const key = (await page.getByTestId('secret').textContent())!;
    await shoot('api-keys');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();

    await signIn(key);
    await open('api-keys', 'API keys');
    const id = `ak_${key.slice(0, 27)}`;
    await page.locator(`tr[data-key="${id}"]`).getByRole('button', { name: /^Revoke / }).click();
    await page.getByRole('button', { name: 'Revoke: it stops working' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.getByText('session has ended').waitFor();
    // The cookie is no longer good for anything, even by hand.
    const status = await page.evaluate<number>("fetch('/credentials', { headers: { 'Ngrok-Version': '2' } }).then((r) => r.status)");
    assert.equal(status, 401);
  });
});
