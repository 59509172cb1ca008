// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KsuidGenerator, encodeBase62, formatTimestamp, isIdOf, isKsuid, ksuidSeconds, newId } from '../../src/domain/ids.js';
import { hashSecret, isWellFormedSecret, newSecretFor, randomBase62, secretMatchesHash } from '../../src/domain/secrets.js';

describe('KSUID ids', () => {
  it('encode 20 bytes as 27 base62 characters, left-padded with 0', () => {
    assert.equal(encodeBase62(new Uint8Array(20), 27), '0'.repeat(27));
    assert.equal(encodeBase62(new Uint8Array(20).fill(0xff), 27), 'aWgEPTl1tmebfsQzFP4bxwgy80V');
  });

  it('carry seconds since 1400000000 in their first four bytes', () => {
    const generator = new KsuidGenerator(() => 1_800_000_000_500);
    const { ksuid, seconds } = generator.next();
    assert.equal(seconds, 1_800_000_000);
    assert.equal(ksuidSeconds(ksuid), 1_800_000_000);
    assert.equal(ksuid.length, 27);
  });

  it('strictly increase within one second by incrementing the payload', () => {
    const generator = new KsuidGenerator(() => 1_800_000_000_000);
    const made = Array.from({ length: 1000 }, () => generator.next().ksuid);
    for (let i = 1; i < made.length; i++) assert.ok(made[i - 1]! < made[i]!, `${made[i - 1]} < ${made[i]}`);
  });

  it('stay increasing when the clock steps back', () => {
    let now = 1_800_000_010_000;
    const generator = new KsuidGenerator(() => now);
    const first = generator.next().ksuid;
    now -= 5000;
    assert.ok(generator.next().ksuid > first);
  });

  it('newId gives <prefix>_<ksuid> and an RFC 3339 created_at of the same second', () => {
    const { id, createdAt } = newId('cr');
    assert.match(id, /^cr_[0-9A-Za-z]{27}$/);
    assert.equal(createdAt, formatTimestamp(ksuidSeconds(id.slice(3))));
    assert.match(createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('isIdOf checks prefix and KSUID shape', () => {
    assert.ok(isIdOf('cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'cr'));
    assert.ok(!isIdOf('cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'edgtls'));
    assert.ok(!isIdOf('cr_2NqzB6YjgDSQ5Y3cJZ8aU8lts', 'cr'));
    assert.ok(isIdOf('cr_zzzzzzzzzzzzzzzzzzzzzzzzzzz', 'cr'), 'the shape counts, not the KSUID range');
    assert.ok(!isKsuid('zzzzzzzzzzzzzzzzzzzzzzzzzzz'), 'beyond the largest KSUID');
    assert.ok(!isKsuid('2NqzB6YjgDSQ5Y3cJZ8aU8lts-Q'));
  });
});

describe('secrets', () => {
  it('are <ksuid of the id>_<21 base62> and verify only against their own hash', () => {
    const secret = newSecretFor('cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ');
    assert.match(secret, /^2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ_[0-9A-Za-z]{21}$/);
    assert.ok(isWellFormedSecret(secret));
    assert.ok(secretMatchesHash(secret, hashSecret(secret)));
    // Another last character (replacing it with a fixed one would be a no-op once in 62 runs).
    const altered = `${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`;
    assert.ok(!secretMatchesHash(altered, hashSecret(secret)));
    assert.equal(hashSecret(secret).length, 64);
  });

  it('draw every base62 character', () => {
    const seen = new Set(randomBase62(20_000));
    assert.equal(seen.size, 62);
  });
});
