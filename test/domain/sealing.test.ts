import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { seal, sealingKey, unseal } from '../../src/domain/sealing.js';

describe('sealing (AES-256-GCM at rest)', () => {
  const key = sealingKey(randomBytes(32), 'acme');

  it('opens what it sealed, and never writes the plaintext', () => {
    const sealed = seal(key, '-----BEGIN PRIVATE KEY-----\nsecret', 'certificate:a.example.com');
    assert.doesNotMatch(sealed, /PRIVATE|secret/);
    assert.equal(unseal(key, sealed, 'certificate:a.example.com'), '-----BEGIN PRIVATE KEY-----\nsecret');
    assert.notEqual(seal(key, 'same', 'c'), seal(key, 'same', 'c'), 'a fresh IV each time');
  });

  it('refuses another key, another context, or an altered value', () => {
    const sealed = seal(key, 'secret', 'certificate:a.example.com');
    assert.throws(() => unseal(sealingKey(randomBytes(32), 'acme'), sealed, 'certificate:a.example.com'));
    assert.throws(() => unseal(key, sealed, 'certificate:b.example.com'));
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    assert.throws(() => unseal(key, parts.join('.'), 'certificate:a.example.com'));
    assert.throws(() => unseal(key, 'garbage', 'certificate:a.example.com'), /not a sealed value/);
  });

  it('derives distinct keys per purpose, from a secret of 32 bytes or more', () => {
    const secret = randomBytes(32);
    assert.notDeepEqual(sealingKey(secret, 'acme'), sealingKey(secret, 'cluster-ca'));
    assert.throws(() => sealingKey(randomBytes(16), 'acme'), RangeError);
  });
});
