// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { validatePolicy } from '../../src/domain/policy/index.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { CLI_ARGS } from '../helpers/server-process.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'burrow-policy-'));

function burrow(args: string[], input?: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [...CLI_ARGS, ...args], {
    cwd: root,
    input,
    encoding: 'utf8',
    env: { ...process.env, MAX_POLICY_RULES: '', REGION: '', ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

// The offline validator (the API is asked only for its message, the same function's): as
// store-independent as `policy test` below.
describe('burrow policy validate', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t?.close());

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

  it('--endpoint validates an agent policy for that kind: HTTP phases on http, 2230 on tcp', () => {
    const document = file('http.yaml', 'on_http_request:\n  - actions: [{type: deny}]\non_http_response:\n  - actions: [{type: remove-headers, config: {headers: [server]}}]\n');
    const http = burrow(['policy', 'validate', '--endpoint', 'http', document]);
    assert.equal(http.code, 0, http.stderr);
    assert.match(http.stdout, /valid \(2 rules\)/);
    const tcp = burrow(['policy', 'validate', '--endpoint', 'tcp', document]);
    assert.equal(tcp.code, 1);
    assert.match(tcp.stderr, /ERR_NGROK_2230/);
    assert.notEqual(burrow(['policy', 'validate', '--endpoint', 'ftp', document]).code, 0);
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

  it('exits 2 (usage) with one line for a --max-rules that is not 1 to 1000', () => {
    const three = file('three-again.yaml', 'on_tcp_connect:\n  - actions: [{type: deny}]\n');
    for (const value of ['abc', '0', '1001', '2.5', '']) {
      const result = burrow(['policy', 'validate', '--max-rules', value, three]);
      assert.equal(result.code, 2, `--max-rules ${JSON.stringify(value)}: ${result.stderr}`);
      assert.equal(result.stderr, 'burrow: --max-rules must be a whole number from 1 to 1000.\n');
    }
  });

  it('refuses a policy too expensive to evaluate (issue 29), as the API does, which leaves the edge as it was', async () => {
    const list = `[${Array.from({ length: 60 }, (_, i) => i + 1).join(', ')}]`;
    const expression = `${list}.all(a, ${list}.all(b, ${list}.all(c, ${list}.all(d, ${list}.all(e, a + b + c + d + e > 0)))))`;
    const document = `on_tcp_connect:\n  - expressions:\n      - "${expression}"\n    actions: [{type: deny}]\n`;
    const result = burrow(['policy', 'validate', file('stall.yaml', document)]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /ERR_NGROK_2200: Rule 1, expression 1, line 3: .* could take up to [\d,]+ steps to evaluate, more than the 10,000 allowed per expression: its comprehensions may run their innermost body 777,600,000 times/);

    const edge = json<{ id: string }>(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { value: 'on_tcp_connect:\n  - actions: [{type: deny}]\n' } } })).id;
    const response = await t.call({ method: 'PUT', url: `/edges/tls/${edge}/traffic_policy`, body: { value: document } });
    assert.equal(response.statusCode, 400);
    const body = json<{ error_code: string; msg: string }>(response);
    assert.equal(body.error_code, 'ERR_NGROK_2200');
    assert.ok(result.stderr.includes(`ERR_NGROK_2200: ${body.msg}`), result.stderr);
    const stored = json<{ value: string }>(await t.call({ method: 'GET', url: `/edges/tls/${edge}/traffic_policy` }));
    assert.equal(stored.value, 'on_tcp_connect:\n  - actions: [{type: deny}]\n');
  });

  it('exits 1 with a message for a missing file', () => {
    const result = burrow(['policy', 'validate', join(dir, 'missing.yaml')]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no such file/);
  });
});

describe('burrow policy test', () => {
  const policy = file(
    'test.yaml',
    [
      'on_tcp_connect:',
      '  - name: Office only',
      '    expressions: ["endpoint.host == \'app.example.com\'"]',
      '    actions:',
      '      - type: log',
      '        config: {metadata: {client: "${conn.client_ip}:${conn.client_port}"}}',
      '      - type: restrict-ips',
      '        config: {allow: ["203.0.113.0/24", "2001:db8::/32"]}',
      '  - name: Late',
      '    expressions: ["timestamp(time.now).getHours() >= 22"]',
      '    actions: [{type: deny}]',
      '',
    ].join('\n'),
  );
  const at = ['--endpoint-host', 'app.example.com', '--time', '2024-05-01T12:00:00Z'];

  it('exits 0 for an allowed connection and prints each rule and the verdict', () => {
    const result = burrow(['policy', 'test', policy, '--client-ip', '203.0.113.7', '--client-port', '41000', ...at]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Rule 1 \("Office only"\): matched\n  action 1 log: \{"client":"203\.0\.113\.7:41000"\}\n  action 2 restrict-ips: allow \(matched 203\.0\.113\.0\/24\)\n/);
    assert.match(result.stdout, /Rule 2 \("Late"\): not matched\n/);
    assert.match(result.stdout, /Verdict: allowed\n$/);
  });

  it('exits 1 for a closed connection and says which action closed it', () => {
    const result = burrow(['policy', 'test', policy, '--client-ip', '198.51.100.1', ...at]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /action 2 restrict-ips: deny \(in no allowed CIDR\), connection closed/);
    assert.match(result.stdout, /Rule 2 \("Late"\): not evaluated/);
    assert.match(result.stdout, /Verdict: closed by rule 1 \("Office only"\), action 2 \(restrict-ips\)\n$/);
  });

  it('prints the verdict as JSON with --json (IPv4-mapped client, time given)', () => {
    const result = burrow(['policy', 'test', policy, '--client-ip', '::ffff:198.51.100.1', '--time', '2024-05-01T23:30:00+00:00', '--json']);
    assert.equal(result.code, 1, result.stderr);
    const output = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(output.allowed, false);
    assert.deepEqual(output.closed_by, { rule: 2, name: 'Late', action: 1, type: 'deny' });
    assert.equal(output.closedBy, undefined);
    assert.deepEqual((output.rules as Array<{ matched: boolean }>).map((r) => r.matched), [false, true]);
    assert.equal((output.connection as { time: string }).time, '2024-05-01T23:30:00Z');
  });

  it('conn.server_region is --region, else REGION as serve reads it (checked the same way), else "local"', () => {
    const regional = file('region.yaml', 'on_tcp_connect:\n  - expressions: ["conn.server_region == \'eu-west\'"]\n    actions: [{type: deny}]\n');
    assert.equal(burrow(['policy', 'test', regional, '--client-ip', '203.0.113.7']).code, 0, 'default region: local');
    assert.equal(burrow(['policy', 'test', regional, '--client-ip', '203.0.113.7'], undefined, { REGION: 'eu-west' }).code, 1);
    assert.equal(burrow(['policy', 'test', regional, '--client-ip', '203.0.113.7', '--region', 'eu-west'], undefined, { REGION: 'us' }).code, 1);
    const invalid = burrow(['policy', 'test', regional, '--client-ip', '203.0.113.7'], undefined, { REGION: 'Not A Region' });
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /^burrow: Invalid configuration: REGION must be/);
  });

  it('time.now is the given time in RFC 3339, whole seconds', () => {
    const exact = file('now.yaml', 'on_tcp_connect:\n  - expressions: ["time.now == \'2024-05-01T12:00:00Z\'"]\n    actions: [{type: deny}]\n');
    const result = burrow(['policy', 'test', exact, '--client-ip', '203.0.113.7', ...at]);
    assert.equal(result.code, 1, result.stdout);
  });

  it('exits 2 for an invalid document with the message the API gives', () => {
    const document = 'on_tcp_connect:\n  - expressions: ["conn.client_ip.matches(\'(a)\\\\\\\\1\')"]\n    actions: [{type: deny}]\n';
    const expected = validatePolicy(document);
    assert.ok(!expected.ok);
    assert.equal(expected.error.code, 'ERR_NGROK_2200');
    const result = burrow(['policy', 'test', '-', '--client-ip', '203.0.113.7'], document);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, `-: ERR_NGROK_2200: ${expected.error.message}\n`);
  });

  it('exits 2 with one line for each kind of bad flag', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--client-ip', '203.0.113.256'], /--client-ip "203\.0\.113\.256" is not an IPv4 or IPv6 address/],
      [['--client-ip', '203.0.113.7', '--client-port', '0'], /--client-port "0" must be a whole number from 1 to 65535/],
      [['--client-ip', '203.0.113.7', '--server-port', '65536'], /--server-port "65536"/],
      [['--client-ip', '203.0.113.7', '--time', '2024-05-01 12:00'], /--time "2024-05-01 12:00" is not an RFC 3339 time/],
      [[], /--client-ip is required/],
    ];
    for (const [flags, message] of cases) {
      const result = burrow(['policy', 'test', policy, ...flags]);
      assert.equal(result.code, 2, flags.join(' '));
      assert.match(result.stderr, /^burrow: /, 'errors begin as every other command\'s');
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
    }
  });

  it('exits 2 for a file that cannot be read', () => {
    const result = burrow(['policy', 'test', join(dir, 'missing.yaml'), '--client-ip', '203.0.113.7']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no such file/);
  });
});
