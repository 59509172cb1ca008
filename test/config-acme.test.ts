// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

const DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

function refuses(env: Record<string, string>, variable: string): void {
  assert.throws(() => loadConfig({}, { ACME_DIRECTORY_URL: DIRECTORY, ...env }), (error: unknown) => error instanceof ConfigError && error.message.includes(variable));
}

describe('ACME configuration (CERTIFICATES.md §1)', () => {
  it('is off without ACME_DIRECTORY_URL, whatever else is set', () => {
    assert.equal(loadConfig({}, { ACME_EMAIL: 'ops@example.com' }).tunnels.acme, undefined);
  });

  it('reads every variable', () => {
    const acme = loadConfig({}, {
      ACME_DIRECTORY_URL: DIRECTORY,
      ACME_EMAIL: 'ops@example.com',
      ACME_EAB_KID: 'kid-1',
      ACME_EAB_HMAC_KEY: 'c2VjcmV0LWtleQ',
      ACME_RENEW_BEFORE: '30d',
      ACME_RENEW_INTERVAL: '10m',
      ACME_DNS_HOOK: '/usr/local/bin/dns-hook',
      ACME_CHALLENGES: 'http-01, tls-alpn-01',
    }).tunnels.acme;
    assert.deepEqual(acme, {
      directoryUrl: DIRECTORY,
      email: 'ops@example.com',
      eab: { kid: 'kid-1', hmacKey: 'c2VjcmV0LWtleQ' },
      renewBeforeMs: 30 * 86_400_000,
      renewIntervalMs: 600_000,
      dnsHook: '/usr/local/bin/dns-hook',
      challenges: ['http-01', 'tls-alpn-01'],
    });
  });

  it('defaults to both challenges, tls-alpn-01 first, renewal at two thirds of the lifetime, checked every minute', () => {
    const acme = loadConfig({}, { ACME_DIRECTORY_URL: DIRECTORY }).tunnels.acme;
    assert.deepEqual(acme?.challenges, ['tls-alpn-01', 'http-01']);
    assert.equal(acme?.renewBeforeMs, undefined);
    assert.equal(acme?.renewIntervalMs, 60_000);
    assert.equal(acme?.eab, undefined);
  });

  it('refuses bad values by name', () => {
    assert.throws(() => loadConfig({}, { ACME_DIRECTORY_URL: 'http://insecure.example/dir' }), /ACME_DIRECTORY_URL must be an https/);
    assert.throws(() => loadConfig({}, { ACME_DIRECTORY_URL: 'not a url' }), /ACME_DIRECTORY_URL/);
    refuses({ ACME_EMAIL: 'nobody' }, 'ACME_EMAIL');
    refuses({ ACME_EAB_KID: 'kid-1' }, 'ACME_EAB_HMAC_KEY');
    refuses({ ACME_EAB_HMAC_KEY: 'abc' }, 'ACME_EAB_KID');
    refuses({ ACME_EAB_KID: 'k', ACME_EAB_HMAC_KEY: 'not base64url!' }, 'ACME_EAB_HMAC_KEY');
    refuses({ ACME_RENEW_BEFORE: '30 days' }, 'ACME_RENEW_BEFORE');
    refuses({ ACME_CHALLENGES: 'dns-01' }, 'ACME_CHALLENGES');
    refuses({ ACME_RENEW_INTERVAL: '0s' }, 'ACME_RENEW_INTERVAL');
    refuses({ ACME_RENEW_INTERVAL: '2d' }, 'ACME_RENEW_INTERVAL');
    refuses({ ACME_RENEW_INTERVAL: '5 minutes' }, 'ACME_RENEW_INTERVAL');
  });
});
