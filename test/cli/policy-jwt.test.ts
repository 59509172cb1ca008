// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { CLI_ARGS } from '../helpers/server-process.js';

// `burrow policy validate` and `policy test --request` with jwt-validation (IDENTITY.md §3): the
// reference's codes offline, and the HTTP phase verifying a token against a JWKS URL served here.
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'burrow-policy-jwt-'));
const ISSUER = 'https://issuer.example/';

/** Asynchronous: the JWKS server in this process must answer while the CLI runs. */
function burrow(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI_ARGS, ...args], { cwd: root, env: { ...process.env, MAX_POLICY_RULES: '', REGION: '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const document = (jku: string, algorithms = '[ES256]') => `on_http_request:
  - actions:
      - type: jwt-validation
        config:
          issuer: {allow_list: [{value: "${ISSUER}"}]}
          http: {tokens: [{type: jwt, method: header, name: Authorization, prefix: "Bearer "}]}
          jws: {allowed_algorithms: ${algorithms}, keys: {sources: {additional_jkus: ["${jku}"]}}}
`;

describe('burrow policy validate / test with jwt-validation', () => {
  let jwks: http.Server;
  let jku: string;
  let token: string;

  before(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    token = await new SignJWT({ iss: ISSUER, sub: 'cli', exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(privateKey);
    jwks = http.createServer((_, res) => res.end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    jku = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;
  });
  after(() => new Promise((resolve) => jwks.close(resolve)));

  it('validate: the reference\'s code for a refused algorithm; the document passes with ES256', async () => {
    const bad = await burrow(['policy', 'validate', '--endpoint', 'https', file('none.yaml', document(jku, '[ES256, none]'))]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /ERR_NGROK_7177: .*"none" algorithm is invalid/);
    const good = await burrow(['policy', 'validate', '--endpoint', 'https', file('ok.yaml', document(jku))]);
    assert.equal(good.code, 0, good.stderr);
  });

  it('test --request: a valid token reaches the agent, a missing or foreign one is answered 401', async () => {
    const policy = file('jwt.yaml', document(jku));
    const base = ['policy', 'test', policy, '--client-ip', '203.0.113.7', '--request', 'GET /'];
    const ok = await burrow([...base, '--header', `Authorization: Bearer ${token}`]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /Verdict: reaches the agent/);
    const missing = await burrow(base);
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /Answer to the client: 401\n {2}WWW-Authenticate: Bearer\n/);
    const forged = await burrow([...base, '--header', `Authorization: Bearer ${token.slice(0, -4)}AAAA`]);
    assert.equal(forged.code, 1);
    assert.match(forged.stdout, /WWW-Authenticate: Bearer error="invalid_token"/);
  });
});
