// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RETRY_FIRST_MS, RETRY_MAX_MS, challengeKey, renewalTime, retryTime } from '../../src/domain/acme/schedule.js';

const DAY = 86_400_000;

describe('ACME schedule', () => {
  it('renews at two thirds of the lifetime, or ACME_RENEW_BEFORE ahead of expiry', () => {
    assert.equal(renewalTime(0, 90 * DAY, undefined), 60 * DAY);
    assert.equal(renewalTime(1000, 1000 + 6 * DAY, undefined), 1000 + 4 * DAY);
    assert.equal(renewalTime(0, 90 * DAY, 30 * DAY), 60 * DAY);
    // never before the certificate's start, however large the margin
    assert.equal(renewalTime(5 * DAY, 10 * DAY, 30 * DAY), 5 * DAY);
  });

  it('backs off after failures: a minute, doubling, at most a day', () => {
    assert.equal(retryTime(0, 1), RETRY_FIRST_MS);
    assert.equal(retryTime(0, 2), 2 * RETRY_FIRST_MS);
    assert.equal(retryTime(0, 5), 16 * RETRY_FIRST_MS);
    assert.equal(retryTime(0, 40), RETRY_MAX_MS);
    assert.equal(retryTime(0, 1000), RETRY_MAX_MS);
  });

  it('keys http-01 answers by token and tls-alpn-01 answers by name', () => {
    assert.equal(challengeKey('http-01', 'tok'), 'http:tok');
    assert.equal(challengeKey('tls-alpn-01', 'a.example.com'), 'alpn:a.example.com');
  });
});
