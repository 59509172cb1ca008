// @test-pass sqlite
// validatePolicy never throws, whatever it is given, and hostile documents stay cheap.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { validatePolicy } from '../../../src/domain/policy/index.js';
import { scanInterpolations } from '../../../src/domain/policy/interpolation.js';

const CODE = /^ERR_NGROK_22\d\d$/;

function assertWellFormed(source: string): void {
  const result = validatePolicy(source);
  if (!result.ok) {
    assert.match(result.error.code, CODE);
    assert.equal(typeof result.error.message, 'string');
    assert.ok(result.error.message.length > 0);
  }
}

const SEED = `on_tcp_connect:
  - name: Block some countries
    expressions:
      - "conn.geo.country_code in ['XX', 'YY'] && inCidrRange(conn.client_ip, '10.0.0.0/8')"
    actions:
      - type: log
        config:
          metadata:
            country: "\${conn.geo.country_code}"
      - type: restrict-ips
        config: {allow: ["10.0.0.0/8", "2001:db8::/32"], enforce: false}
      - type: deny
`;

describe('validatePolicy never throws', () => {
  test('for arbitrary strings', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), assertWellFormed), { numRuns: 500 });
  });

  test('for arbitrary JSON values', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => assertWellFormed(JSON.stringify(value) ?? '')), { numRuns: 500 });
  });

  test('for mutations of a valid policy (deletions, insertions, swaps)', () => {
    const symbols = fc.constantFrom(...'[]{}:,-"\'\n #&*!|>${}%@`\t\\'.split(''), 'type: deny', '${', '::', '/33', 'null', '~');
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(SEED.length), fc.nat(6), symbols), { maxLength: 6 }), (edits) => {
        let doc = SEED;
        for (const [at, remove, insert] of edits) doc = doc.slice(0, at) + insert + doc.slice(at + remove);
        assertWellFormed(doc);
      }),
      { numRuns: 800 },
    );
  });

  test('for values that are not strings at all (JavaScript callers)', () => {
    for (const value of [undefined, null, 42, {}, [], Symbol('x')]) {
      const result = validatePolicy(value as unknown as string);
      assert.ok(!result.ok);
      assert.equal(result.error.code, 'ERR_NGROK_2236');
    }
  });

  test('for lone surrogates and control characters', () => {
    for (const doc of ['\uD800', 'on_tcp_connect: "\uDFFF"', '\u0000', 'a\u0085b: 1', '\u2028on_tcp_connect: []']) assertWellFormed(doc);
  });
});

describe('hostile documents are cheap', () => {
  const within = (ms: number, fn: () => void): void => {
    const start = performance.now();
    fn();
    const took = performance.now() - start;
    assert.ok(took < ms, `took ${took.toFixed(0)} ms`);
  };

  test('a 64 KiB flow nesting is rejected quickly and without a crash', () => {
    within(2000, () => {
      const result = validatePolicy('['.repeat(32768) + ']'.repeat(32767));
      assert.ok(!result.ok && result.error.code === 'ERR_NGROK_2236');
    });
  });

  test('a 64 KiB expression is rejected', () => {
    const result = validatePolicy(`on_tcp_connect:\n  - expressions: ["${'!'.repeat(65000)}true"]\n    actions: [{type: deny}]\n`);
    assert.ok(!result.ok && result.error.code === 'ERR_NGROK_2200');
  });

  test('a long chain of && is rejected by the CEL size limit, not by a stack overflow', () => {
    const expression = Array(1500).fill('true').join(' && '); // 12 KB: under the byte limit
    const result = validatePolicy(`on_tcp_connect:\n  - expressions: ["${expression}"]\n    actions: [{type: deny}]\n`);
    assert.ok(!result.ok && result.error.code === 'ERR_NGROK_2200');
    assert.match(result.error.message, /too large or too deeply nested/);
  });

  test('a large valid policy validates in reasonable time', () => {
    let doc = 'on_tcp_connect:\n';
    for (let i = 0; i < 25; i++) {
      doc += `  - name: rule ${i}\n    expressions: ["inCidrRanges(conn.client_ip, ['10.0.0.0/8', '192.168.0.0/16']) && conn.geo.country_code != 'XX'"]\n    actions:\n      - type: log\n        config:\n          metadata:\n`;
      for (let j = 0; j < 40; j++) doc += `            k${j}: "\${conn.client_ip} \${endpoint.host}"\n`;
      doc += '      - type: deny\n';
    }
    assert.ok(Buffer.byteLength(doc) < 65536);
    within(2000, () => assert.ok(validatePolicy(doc).ok));
  });
});

describe('scanInterpolations', () => {
  const cases: Array<[string, string[] | 'unterminated']> = [
    ['no interpolation', []],
    ['costs $5 and {braces}', []],
    ['${a}', ['a']],
    ['x ${a} y ${b.c} z', ['a', 'b.c']],
    ['${ {"a": 1}["a"] }', [' {"a": 1}["a"] ']],
    ['${ "}" }', [' "}" ']],
    ["${ '}' + \"\\\"}\" }", [" '}' + \"\\\"}\" "]],
    ['${ r"\\" }', [' r"\\" ']],
    ['${ """}""" }', [' """}""" ']],
    ['${}', ['']],
    ['${a', 'unterminated'],
    ['${ "}', 'unterminated'],
    ['ok ${a} then ${b', 'unterminated'],
  ];
  for (const [text, expected] of cases) {
    test(`${JSON.stringify(text)}`, () => {
      const result = scanInterpolations(text);
      if (expected === 'unterminated') assert.equal(result.ok, false);
      else assert.deepEqual(result.ok && result.parts.map((p) => p.expression), expected);
    });
  }
});
