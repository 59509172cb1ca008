// @test-pass sqlite
// Keeps docs/POLICY.md honest: every ```yaml / ```json block must be a valid policy, and every
// block whose info string names an error code must fail with exactly that code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validatePolicy } from '../../../src/domain/policy/index.js';

const markdown = readFileSync(new URL('../../../docs/POLICY.md', import.meta.url), 'utf8');
// An info string may name the endpoint kind the example is for (`yaml http`); a TLS edge's module otherwise.
const blocks = [...markdown.matchAll(/^```(yaml|json)(?: (http|https|tcp|tls))?(?: (ERR_NGROK_\d+))?\n([\s\S]*?)^```$/gm)].map((m) => ({
  language: m[1]!,
  endpoint: m[2] as 'http' | 'https' | 'tcp' | 'tls' | undefined,
  code: m[3],
  source: m[4]!,
  line: markdown.slice(0, m.index).split('\n').length,
}));

test('docs/POLICY.md has examples of both kinds', () => {
  assert.ok(blocks.filter((b) => !b.code).length >= 8);
  assert.ok(blocks.filter((b) => b.code).length >= 8);
});

for (const block of blocks) {
  test(`docs/POLICY.md line ${block.line}: ${block.language} example ${block.code ? `fails with ${block.code}` : 'is valid'}`, () => {
    const result = validatePolicy(block.source, block.endpoint ? { endpoint: block.endpoint, subject: 'endpoint' } : undefined);
    if (block.code) {
      assert.ok(!result.ok, 'expected an error');
      assert.equal(result.error.code, block.code, result.error.message);
    } else {
      assert.ok(result.ok, result.ok ? '' : result.error.message);
    }
  });
}
