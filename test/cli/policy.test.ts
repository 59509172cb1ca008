import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { validatePolicy } from '../../src/domain/policy/index.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'burrow-policy-'));

function burrow(args: string[], input?: string) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    input,
    encoding: 'utf8',
    env: { ...process.env, MAX_POLICY_RULES: '' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('burrow policy validate', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('exits 0 and says so for a valid document', () => {
    const result = burrow(['policy', 'validate', file('ok.yaml', 'on_tcp_connect:\n  - actions:\n      - type: deny\n')]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /valid \(1 rule\)/);
  });

  it('exits 1 and prints the code and the same message the API answers', async () => {
    const document = 'on_tcp_connect:\n  - name: Redirect\n    actions:\n      - type: log\n        config: {metadata: {a: 1}}\n      - type: redirect\n';
    const result = burrow(['policy', 'validate', file('bad.yaml', document)]);
    assert.equal(result.code, 1);
    const expected = validatePolicy(document);
    assert.ok(!expected.ok);
    assert.ok(result.stderr.includes(`ERR_NGROK_2202: ${expected.error.message}`), result.stderr);

    const edge = json<{ id: string }>(await t.call({ method: 'POST', url: '/edges/tls', body: {} })).id;
    const response = await t.call({ method: 'PUT', url: `/edges/tls/${edge}/traffic_policy`, body: { value: document } });
    assert.equal(json(response).msg, expected.error.message);
  });

  it('reads standard input with "-" and reports parse errors with their line', () => {
    const result = burrow(['policy', 'validate', '-'], 'on_tcp_connect:\n  - actions: [\n');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /ERR_NGROK_2236: .*line \d+/);
  });

  it('honours --max-rules', () => {
    const three = file('three.yaml', `on_tcp_connect:\n${'  - actions: [{type: deny}]\n'.repeat(3)}`);
    assert.equal(burrow(['policy', 'validate', three]).code, 0);
    const result = burrow(['policy', 'validate', '--max-rules', '2', three]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /ERR_NGROK_2264/);
  });

  it('exits 1 with a message for a missing file', () => {
    const result = burrow(['policy', 'validate', join(dir, 'missing.yaml')]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no such file/);
  });
});
