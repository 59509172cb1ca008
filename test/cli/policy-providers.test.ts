// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { CLI_ARGS } from '../helpers/server-process.js';

// `burrow policy validate|test` know the OAuth providers `burrow serve` would: the built-in ones
// and those of OAUTH_PROVIDERS_FILE (IDENTITY.md §2), read and checked the same way.
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'burrow-policy-providers-'));

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function burrow(args: string[], providersFile: string) {
  const env = { ...process.env, MAX_POLICY_RULES: '', REGION: '', OAUTH_PROVIDERS_FILE: providersFile };
  const result = spawnSync(process.execPath, [...CLI_ARGS, ...args], { cwd: root, encoding: 'utf8', env });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const PROVIDERS = file('providers.json', JSON.stringify({ corp: { authorize_url: 'https://sso.corp.example/authorize', token_url: 'https://sso.corp.example/token', userinfo_url: 'https://sso.corp.example/me' } }));
const POLICY = file(
  'corp.yaml',
  `on_http_request:
  - actions:
      - type: oauth
        config: {provider: corp, client_id: corp-app, client_secret: corp-secret-value}
`,
);
const TEST = ['policy', 'test', POLICY, '--client-ip', '203.0.113.7', '--request', 'GET /wiki', '--endpoint-url', 'https://wiki.example.com'];

describe('burrow policy with OAUTH_PROVIDERS_FILE', () => {
  it("a custom provider is known: validate accepts the policy, test sends the client to that provider's login", () => {
    const valid = burrow(['policy', 'validate', POLICY, '--endpoint', 'https'], PROVIDERS);
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, /valid \(1 rule\)/);
    const tested = burrow(TEST, PROVIDERS);
    assert.equal(tested.code, 1, tested.stderr);
    assert.match(tested.stdout, /action 1 oauth: answered 302 \(no login session here: the client is sent to log in with OAuth provider corp, then back to \/wiki\)/);
    assert.doesNotMatch(tested.stdout + tested.stderr, /corp-secret-value/);
  });

  it('without the file the provider is unknown, as to the server', () => {
    const valid = burrow(['policy', 'validate', POLICY, '--endpoint', 'https'], '');
    assert.equal(valid.code, 1);
    assert.match(valid.stderr, /config\.provider "corp" is not a provider burrow knows; .*or add it to OAUTH_PROVIDERS_FILE/);
    const tested = burrow(TEST, '');
    assert.equal(tested.code, 2);
    assert.match(tested.stderr, /"corp" is not a provider burrow knows/);
  });

  it('a file that cannot be read or is invalid: exit 2, one line naming the variable', () => {
    for (const [path, words] of [
      [join(dir, 'missing.json'), /OAUTH_PROVIDERS_FILE cannot be read \(ENOENT/],
      [file('bad.json', JSON.stringify({ corp: { authorize_url: 'http://sso.corp.example/a', token_url: 'https://x.example/t', userinfo_url: 'https://x.example/u' } })), /OAUTH_PROVIDERS_FILE .*"corp"\.authorize_url must be an https:\/\/ URL/],
    ] as const) {
      for (const args of [['policy', 'validate', POLICY], TEST]) {
        const result = burrow(args, path);
        assert.equal(result.code, 2, `${args[1]}: ${result.stdout}`);
        assert.match(result.stderr, words);
        assert.equal(result.stderr.trim().split('\n').length, 1);
      }
    }
  });
});
