// @test-pass sqlite
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, it } from 'node:test';
import { validatePolicy, type EndpointKind } from '../../../src/domain/policy/index.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';

let caPem: string;
before(async () => {
  caPem = (await loadOrCreateCa(mkdtempSync(join(tmpdir(), 'terminate-tls-')))).certPem;
});

const policy = (config: unknown) => JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'terminate-tls', ...(config === undefined ? {} : { config }) }] }] });

function check(config: unknown, endpoint: EndpointKind = 'tls') {
  return validatePolicy(policy(config), { subject: 'endpoint', endpoint });
}

it('defaults: TLS 1.2 to 1.3, no mutual TLS, require-and-verify', () => {
  const result = check(undefined);
  assert.ok(result.ok);
  assert.deepEqual(result.policy.rules[0]!.actions[0], {
    type: 'terminate-tls',
    config: { min_version: '1.2', max_version: '1.3', mutual_tls_certificate_authorities: [], mutual_tls_verification_strategy: 'require-and-verify' },
  });
});

it('accepts every documented field value on tls and https endpoints and TLS edges', () => {
  for (const endpoint of ['tls', 'https', 'tls-edge'] as const) {
    const result = check({ min_version: '1.3', max_version: '1.3', mutual_tls_certificate_authorities: [caPem], mutual_tls_verification_strategy: 'require-any' }, endpoint);
    assert.ok(result.ok, JSON.stringify(result));
  }
  for (const strategy of ['require-and-verify', 'require-any', 'request']) assert.ok(check({ mutual_tls_verification_strategy: strategy }).ok);
});

it('refuses it on tcp and http endpoints (2202), and bad configs (2203/2204)', () => {
  for (const endpoint of ['tcp', 'http'] as const) {
    const result = check(undefined, endpoint);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2202');
  }
  const cases: [unknown, string][] = [
    [{ min_version: '1.1' }, 'ERR_NGROK_2204'],
    [{ max_version: '1.4' }, 'ERR_NGROK_2204'],
    [{ min_version: '1.3', max_version: '1.2' }, 'ERR_NGROK_2204'],
    [{ mutual_tls_verification_strategy: 'verify' }, 'ERR_NGROK_2204'],
    [{ mutual_tls_certificate_authorities: ['not a certificate'] }, 'ERR_NGROK_2204'],
    [{ mutual_tls_certificate_authorities: 'x' }, 'ERR_NGROK_2203'],
    [{ server_certificate: 'x', server_private_key: 'y' }, 'ERR_NGROK_2204'],
    [{ min_versions: '1.2' }, 'ERR_NGROK_2203'],
    ['1.2', 'ERR_NGROK_2203'],
  ];
  for (const [config, code] of cases) {
    const result = check(config);
    assert.ok(!result.ok, JSON.stringify(config));
    assert.equal(result.error.code, code, `${JSON.stringify(config)}: ${result.error.message}`);
  }
});
