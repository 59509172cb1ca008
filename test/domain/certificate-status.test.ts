// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AcmeCertificateRow } from '../../src/domain/acme/types.js';
import { certificateStatus } from '../../src/domain/reservations/certificate-status.js';
import type { CertificatePolicy } from '../../src/domain/reservations/types.js';

const policy: CertificatePolicy = { authority: 'letsencrypt', privateKeyType: 'ecdsa', setAt: '2026-01-01T00:00:00Z' };
const on = { configured: true, dnsHook: false };
const off = { configured: false, dnsHook: false };
const row = (changes: Partial<AcmeCertificateRow>): AcmeCertificateRow => ({
  name: 'a.example.com',
  certPem: null,
  keySealed: null,
  notAfter: null,
  orderAt: Date.parse('2026-02-01T00:00:00Z'),
  failures: 0,
  lastError: null,
  ...changes,
});

describe("a reserved domain's certificate status", () => {
  it('is null without a policy, and says so when ACME is off', () => {
    assert.equal(certificateStatus('a.example.com', null, on, undefined), null);
    assert.equal(certificateStatus('a.example.com', policy, off, undefined)?.provisioningJob?.errorCode, 'ACME_NOT_CONFIGURED');
  });

  it('is a job while the first certificate is ordered, and the renewal time once it is in', () => {
    assert.deepEqual(certificateStatus('a.example.com', policy, on, undefined), {
      renewsAt: null,
      provisioningJob: { errorCode: null, msg: 'A certificate is being ordered.', startedAt: policy.setAt, retriesAt: null },
    });
    assert.deepEqual(certificateStatus('a.example.com', policy, on, row({ certPem: 'PEM', keySealed: 'k', notAfter: 1 })), { renewsAt: '2026-02-01T00:00:00Z', provisioningJob: null });
  });

  it('reports a failed order with its retry time, the certificate in or not', () => {
    const failed = certificateStatus('a.example.com', policy, on, row({ failures: 2, lastError: 'rateLimited' }));
    assert.equal(failed?.renewsAt, null);
    assert.equal(failed?.provisioningJob?.errorCode, 'ACME_ORDER_FAILED');
    assert.match(failed?.provisioningJob?.msg ?? '', /2 in a row\): rateLimited/);
    assert.equal(failed?.provisioningJob?.retriesAt, '2026-02-01T00:00:00Z');
    const renewalFailed = certificateStatus('a.example.com', policy, on, row({ certPem: 'PEM', failures: 1, lastError: 'timeout' }));
    assert.equal(renewalFailed?.renewsAt, '2026-02-01T00:00:00Z');
    assert.equal(renewalFailed?.provisioningJob?.errorCode, 'ACME_ORDER_FAILED');
  });

  it('says a wildcard is not ordered without a DNS hook (dns-01), and follows its order with one', () => {
    const noHook = certificateStatus('*.example.com', policy, on, undefined);
    assert.equal(noHook?.provisioningJob?.errorCode, 'ACME_DNS_HOOK_MISSING');
    assert.match(noHook?.provisioningJob?.msg ?? '', /ACME_DNS_HOOK/);
    const hook = { configured: true, dnsHook: true };
    assert.equal(certificateStatus('*.example.com', policy, hook, undefined)?.provisioningJob?.errorCode, null);
    assert.deepEqual(certificateStatus('*.example.com', policy, hook, row({ name: '*.example.com', certPem: 'PEM', keySealed: 'k', notAfter: 1 })), { renewsAt: '2026-02-01T00:00:00Z', provisioningJob: null });
  });
});
