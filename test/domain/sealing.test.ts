// @test-pass sqlite
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { seal, sealingKey, unseal, UnsealError } from '../../src/domain/sealing.js';
import { LEGACY_SEALED } from '../helpers/legacy-sealed.js';


describe('sealing (AES-256-GCM at rest)', () => {
  const key = sealingKey(randomBytes(32), 'acme');

  it('opens what it sealed, and never writes the plaintext', () => {
    const sealed = seal(key, '-----BEGIN PRIVATE KEY-----\nsecret', 'certificate:a.example.com');
    assert.match(sealed, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/, 'base64url: it fits a cookie');
    assert.doesNotMatch(sealed, /PRIVATE|secret/);
    assert.equal(unseal(key, sealed, 'certificate:a.example.com'), '-----BEGIN PRIVATE KEY-----\nsecret');
    assert.notEqual(seal(key, 'same', 'c'), seal(key, 'same', 'c'), 'a fresh IV each time');
  });

  it('refuses another key, another context, or an altered or malformed value, never half-opening it', () => {
    const sealed = seal(key, 'secret', 'certificate:a.example.com');
    assert.throws(() => unseal(sealingKey(randomBytes(32), 'acme'), sealed, 'certificate:a.example.com'), UnsealError);
    assert.throws(() => unseal(key, sealed, 'certificate:b.example.com'), UnsealError);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    const legacy = Buffer.from(LEGACY_SEALED.sealed.slice(3), 'base64');
    legacy[legacy.length - 1]! ^= 1;
    for (const bad of [parts.join('.'), `${sealed}.x`, 'v2' + sealed.slice(2), 'garbage', 'v1:', 'v1:AAAA', `v1:${legacy.toString('base64')}`]) {
      assert.throws(() => unseal(key, bad, 'certificate:a.example.com'), UnsealError, bad);
    }
  });

  it('keys are 32 bytes, derived per purpose from a secret of 32 bytes or more', () => {
    const secret = randomBytes(32);
    assert.notDeepEqual(sealingKey(secret, 'acme'), sealingKey(secret, 'cluster-ca'));
    assert.throws(() => sealingKey(randomBytes(16), 'acme'), RangeError);
    assert.throws(() => seal(randomBytes(16), 'x', 'c'), RangeError);
    assert.throws(() => unseal(randomBytes(16), seal(key, 'x', 'c'), 'c'), RangeError);
  });

  it('still opens values sealed in the former `v1:` format, with their key and context only', () => {
    const { key: legacyKey, sealed, context, plaintext } = LEGACY_SEALED;
    assert.equal(unseal(legacyKey, sealed, context), plaintext);
    assert.throws(() => unseal(legacyKey, sealed, 'acme'), UnsealError);
    assert.throws(() => unseal(randomBytes(32), sealed, context), UnsealError);
  });
});
