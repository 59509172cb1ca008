import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { seal, unseal, UnsealError } from '../../src/domain/sealed-secrets.js';

const key = randomBytes(32);

it('a sealed value opens with its key and purpose, and only with them', () => {
  const sealed = seal(key, 'cluster-ca', 'the key PEM');
  assert.match(sealed, /^v1:[A-Za-z0-9+/=]+$/);
  assert.ok(!sealed.includes('the key PEM'));
  assert.equal(unseal(key, 'cluster-ca', sealed), 'the key PEM');
  assert.notEqual(seal(key, 'cluster-ca', 'the key PEM'), sealed, 'a fresh nonce each time');
  assert.throws(() => unseal(randomBytes(32), 'cluster-ca', sealed), UnsealError);
  assert.throws(() => unseal(key, 'acme-account', sealed), UnsealError);
});

it('an altered or malformed value is refused, never half-opened', () => {
  const sealed = seal(key, 'p', 'secret');
  const bytes = Buffer.from(sealed.slice(3), 'base64');
  bytes[bytes.length - 1]! ^= 1;
  for (const bad of [`v1:${bytes.toString('base64')}`, 'v1:', 'v2:' + sealed.slice(3), 'garbage', 'v1:AAAA']) {
    assert.throws(() => unseal(key, 'p', bad), UnsealError, bad);
  }
  assert.throws(() => seal(randomBytes(16), 'p', 'x'), RangeError);
});
