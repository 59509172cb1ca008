// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { CLI_ARGS } from '../helpers/server-process.js';
import { TRIAL_HTTP_POLICY, TRIAL_WEBHOOK_SECRET } from '../helpers/policy.js';

// `burrow policy test --request …` (HTTP-POLICY.md §6): the HTTP phases offline, same exit codes.
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'burrow-policy-http-'));

function burrow(args: string[]) {
  const result = spawnSync(process.execPath, [...CLI_ARGS, ...args], { cwd: root, encoding: 'utf8', env: { ...process.env, MAX_POLICY_RULES: '', REGION: '' } });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const POLICY = file('http.yaml', TRIAL_HTTP_POLICY);
const BASE = ['policy', 'test', POLICY, '--client-ip', '203.0.113.7'];

describe('burrow policy test --request', () => {
  it('prints each rule and action, the request as the agent gets it, and the edited answer; exit 0', () => {
    const result = burrow([...BASE, '--request', 'GET /v1/items?q=1', '--header', 'Accept: text/html', '--endpoint-url', 'http://app.example.com:8080', '--response-status', '200', '--response-header', 'Server: nginx', '--response-header', 'Content-Type: text/html']);
    assert.equal(result.code, 0, result.stderr);
    const out = result.stdout;
    assert.match(out, /GET \/v1\/items\?q=1 to http:\/\/app\.example\.com:8080/);
    assert.match(out, /Rule 1 \("hooks"\): not matched\n {2}Rule 2 \("private"\): not matched\n {2}Rule 3 \("tag"\): matched \(no expressions\)\n {4}action 1 add-headers\n {4}action 2 url-rewrite/);
    assert.match(out, /Request to the agent:\n {2}GET \/v2\/items\?q=1 HTTP\/1\.1\n {2}Host: app\.example\.com:8080\n {2}Accept: text\/html\n {2}x-client: 203\.0\.113\.7\n {2}x-q: 1\n/);
    assert.match(out, /Answer to the client: 200\n {2}Content-Type: text\/html\n {2}x-status: 200\n/);
    assert.doesNotMatch(out, /nginx/);
    assert.match(out, /Verdict: reaches the agent/);
  });

  it('an answer the policy made: exit 1, nothing to the agent, later rules not evaluated, the response phase ran on it', () => {
    const result = burrow([...BASE, '--request', 'GET /private/x']);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /Rule 2 \("private"\): matched\n {4}action 1 deny: answered 403\n {2}Rule 3 \("tag"\): not evaluated \(the policy already answered\)/);
    assert.match(result.stdout, /Request to the agent: none/);
    assert.match(result.stdout, /Answer to the client: 403\n {2}Content-Type: text\/plain; charset=utf-8\n {2}x-status: 403\n {2}body: "403 Forbidden: denied/);
    assert.match(result.stdout, /Verdict: answered by the policy/);
  });

  it('--body-file: a signed webhook passes (exit 0), a tampered one is answered 403 (exit 1); --json', () => {
    const body = file('body.json', '{"zen":"ok"}');
    const signature = `sha256=${createHmac('sha256', TRIAL_WEBHOOK_SECRET).update('{"zen":"ok"}').digest('hex')}`;
    const good = burrow([...BASE, '--request', 'POST /hook', '--body-file', body, '--header', `X-Hub-Signature-256: ${signature}`, '--json']);
    assert.equal(good.code, 0, good.stderr);
    const parsed = JSON.parse(good.stdout) as { allowed: boolean; forwarded: { headers: string[] } };
    assert.equal(parsed.allowed, true);
    assert.deepEqual(parsed.forwarded.headers.slice(2, 6), ['X-Hub-Signature-256', signature, 'Content-Length', '12']);
    const bad = burrow([...BASE, '--request', 'POST /hook', '--body-file', file('tampered.json', '{"zen":"no"}'), '--header', `X-Hub-Signature-256: ${signature}`]);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stdout, /action 1 verify-webhook: answered 403/);
    assert.ok(!(bad.stdout + bad.stderr).includes(TRIAL_WEBHOOK_SECRET));
  });

  it('a login action: no session offline, so the answer is the 302 to /ngrok/login (exit 1); the client secret is never printed', () => {
    const login = file(
      'login.yaml',
      `on_http_request:
  - actions:
      - type: oauth
        config: {provider: github, client_id: Iv1.abc, client_secret: gh-secret-value}
  - actions:
      - type: add-headers
        config: {headers: {x-user: "\${actions.ngrok.oauth.identity.email}"}}
`,
    );
    const result = burrow(['policy', 'test', login, '--client-ip', '203.0.113.7', '--request', 'GET /dash?tab=1', '--endpoint-url', 'https://app.example.com']);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /action 1 oauth: answered 302 \(no login session here: the client is sent to log in with OAuth provider github, then back to \/dash\?tab=1\)/);
    assert.match(result.stdout, /Rule 2: not evaluated/);
    assert.match(result.stdout, /Answer to the client: 302\n {2}Location: \/ngrok\/login\?auth_id=[^&]+&redirect_path=%2Fdash%3Ftab%3D1/);
    assert.doesNotMatch(result.stdout + result.stderr, /gh-secret-value/);
  });

  it('bad flags and documents exit 2 with one line', () => {
    for (const [args, words] of [
      [['--request', 'GET'], /--request "GET" must be a method and a target/],
      [['--request', 'GET /', '--header', 'no colon'], /--header "no colon" must be 'Name: value'/],
      [['--request', 'GET /', '--endpoint-url', 'ftp://x'], /--endpoint-url "ftp:\/\/x" must be http:\/\/ or https:\/\//],
      [['--request', 'GET /', '--response-status', '99'], /--response-status "99" must be a status code from 100 to 599/],
      [['--request', 'GET /', '--response-header', 'A: b'], /--response-header needs --response-status/],
      [['--header', 'A: b'], /need --request/],
      [['--request', 'GET /', '--body-file', join(dir, 'missing')], /--body-file: ENOENT/],
    ] as const) {
      const result = burrow([...BASE, ...args]);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}`);
      assert.match(result.stderr, words);
      assert.equal(result.stderr.trim().split('\n').length, 1);
    }
    const tcpOnly = burrow(['policy', 'test', file('bad.yaml', 'on_http_request:\n  - actions: [{type: verify-webhook, config: {provider: nobody, secret: x}}]\n'), '--client-ip', '203.0.113.7', '--request', 'GET /']);
    assert.equal(tcpOnly.code, 2);
    assert.match(tcpOnly.stderr, /ERR_NGROK_2204: .*"nobody" is not a provider burrow can verify/);
  });
});
