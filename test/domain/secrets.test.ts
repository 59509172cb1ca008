// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.js';
import { newSecretFor, redactSecrets } from '../../src/domain/secrets.js';

describe('redactSecrets', () => {
  const id = newId('cr').id;
  const secret = newSecretFor(id);

  it('cuts a secret to its first 8 characters wherever it stands in a text', () => {
    assert.equal(redactSecrets(secret), `${secret.slice(0, 8)}…`);
    assert.equal(redactSecrets(`before_id "${secret}" is not a credential id.`), `before_id "${secret.slice(0, 8)}…" is not a credential id.`);
    assert.equal(redactSecrets(`${secret},${secret}`), `${secret.slice(0, 8)}…,${secret.slice(0, 8)}…`);
  });

  it('leaves ids, shorter or longer runs and ordinary text alone', () => {
    for (const text of [id, `${id}_x`, `x${secret}`, `${secret}xyz`, 'snake_case_field', '']) assert.equal(redactSecrets(text), text);
  });
});
