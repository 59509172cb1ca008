// The cost bound of CEL (issue 29, item 9): expensive expressions are refused at validation with
// a message that says why, and an evaluation that goes over its run-time budget counts as false
// and is reported, whatever cel-js made of it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, evaluate, validatePolicy } from '../../../src/domain/policy/index.js';
import type { PolicyValidation } from '../../../src/domain/policy/index.js';
import { MAX_EXPRESSION_COST, MAX_POLICY_COST, RUNTIME_BUDGET } from '../../../src/domain/policy/cost.js';
import { POLICY_CONNECTION as CONN } from '../../helpers/policy.js';

const range = (n: number): string => `[${Array.from({ length: n }, (_, i) => i + 1).join(', ')}]`;

/** The policy: five nested comprehensions over a literal list of 60 integers. */
const L = range(60);
export const STALLING_EXPRESSION = `${L}.all(a, ${L}.all(b, ${L}.all(c, ${L}.all(d, ${L}.all(e, a + b + c + d + e > 0)))))`;

function policy(...rules: Array<{ expressions: string[]; actions?: unknown[] }>): string {
  return JSON.stringify({ on_tcp_connect: rules.map((rule) => ({ actions: [{ type: 'deny' }], ...rule })) });
}

function refused(validation: PolicyValidation): { code: string; message: string } {
  assert.ok(!validation.ok, 'the policy was accepted');
  return validation.error;
}

describe('the static cost bound', () => {
  test("refuses the issue's policy, saying how many times its body would run", () => {
    const error = refused(validatePolicy(policy({ expressions: [STALLING_EXPRESSION] })));
    assert.equal(error.code, 'ERR_NGROK_2200');
    assert.match(error.message, /^Rule 1, expression 1, line 1: the expression "\[1, 2, 3/);
    assert.match(error.message, /could take up to [\d,]+ steps to evaluate, more than the 10,000 allowed per expression/);
    assert.match(error.message, /run their innermost body 777,600,000 times; iterate over shorter lists or nest fewer comprehensions\.$/);
  });

  test('refuses it in an interpolation too, and in an agent policy (ERR_NGROK_2224 / 2200)', () => {
    const interpolated = JSON.stringify({
      on_tcp_connect: [{ actions: [{ type: 'log', config: { metadata: { x: `\${${STALLING_EXPRESSION}}` } } }] }],
    });
    const error = refused(validatePolicy(interpolated));
    assert.equal(error.code, 'ERR_NGROK_2224');
    assert.match(error.message, /777,600,000 times/);
    assert.equal(refused(validatePolicy(policy({ expressions: [STALLING_EXPRESSION] }), { subject: 'endpoint' })).code, 'ERR_NGROK_2200');
  });

  test('accepts what policies are written for, and one comprehension over a long list', () => {
    const ordinary = [
      "conn.geo.country_code in ['US', 'CA', 'MX'] && conn.server_port == 443",
      "inCidrRange(conn.client_ip, '10.0.0.0/8') || inCidrRanges(conn.client_ip, ['192.168.0.0/16', '172.16.0.0/12'])",
      "conn.client_ip.matches('^10\\\\.0\\\\.[0-9]+\\\\.[0-9]+$') && endpoint.host.endsWith('.example.com')",
      "['1.2.3.0/24', '5.6.7.0/24'].exists(c, inCidrRange(conn.client_ip, c))",
      "size(actions.ngrok.log.metadata) > 0 && actions.ngrok.log.metadata.exists(k, k.startsWith('x'))",
      `${range(500)}.exists(p, p == conn.client_port)`,
      `${range(30)}.all(a, ${range(30)}.exists(b, a != b))`,
    ];
    for (const expression of ordinary) assert.ok(validatePolicy(policy({ expressions: [expression] })).ok, expression);
  });

  test('refuses values that double without any comprehension (cel.bind)', () => {
    let expression = 'size(v14) > 0';
    for (let i = 14; i > 0; i--) expression = `cel.bind(v${i}, v${i - 1} + v${i - 1}, ${expression})`;
    expression = `cel.bind(v0, [1] + [2], ${expression})`;
    const error = refused(validatePolicy(policy({ expressions: [expression] })));
    assert.equal(error.code, 'ERR_NGROK_2200');
    assert.match(error.message, /it builds or reads very large values; use shorter lists and strings\.$/);
  });

  test('refuses nested comprehensions over what map() builds', () => {
    const error = refused(validatePolicy(policy({ expressions: [`${L}.map(a, ${L}).all(x, x.all(y, x.all(z, y + z > 0)))`] })));
    assert.match(error.message, /216,000 times/);
  });

  test('adds up the expressions of a policy: refused over the policy limit, naming the most expensive', () => {
    // Each expression is just under the per-expression limit; six of them are over the policy's.
    const heavy = `${range(900)}.exists(p, p == conn.client_port + 1)`;
    const one = validatePolicy(policy({ expressions: [heavy] }));
    assert.ok(one.ok, 'one such expression is accepted');
    const rules = Array.from({ length: Math.ceil(MAX_POLICY_COST / MAX_EXPRESSION_COST) + 1 }, () => ({ expressions: [heavy], actions: [{ type: 'log', config: { metadata: { a: 1 } } }] }));
    const error = refused(validatePolicy(policy(...rules)));
    assert.equal(error.code, 'ERR_NGROK_2200');
    assert.match(error.message, /^The expressions of this traffic policy could take up to [\d,]+ steps together to evaluate for one connection, more than the 50,000 allowed; the most expensive is in Rule 1, expression 1 \([\d,]+ steps\)\. Simplify or remove expressions\.$/);
  });
});

describe('the run-time budget', () => {
  // A log action's metadata is a variable: validation assumes it is short, a policy can make it long.
  const items = (n: number) => Array.from({ length: n }, () => 'a');
  const metadataPolicy = (n: number, expression: string) =>
    policy({ expressions: [], actions: [{ type: 'log', config: { metadata: { items: items(n) } } }] }, { expressions: [expression] });

  /** Evaluates `expression` after a log action put `n` items in the metadata; the verdict. */
  function withItems(n: number, expression: string) {
    const compiled = compilePolicy(metadataPolicy(n, expression));
    assert.ok(compiled.ok, 'validation cannot know how long the metadata is');
    return evaluate(compiled.program, CONN);
  }

  test('an evaluation that exceeds it counts as false and is reported', () => {
    const expression = "actions.ngrok.log.metadata.items.all(x, x != 'z')";
    assert.equal(withItems(100, expression).allowed, false, 'within the budget, the rule matches and denies');
    const verdict = withItems(RUNTIME_BUDGET, expression);
    assert.equal(verdict.allowed, true);
    assert.deepEqual(verdict.rules.map((r) => r.matched), [true, false]);
    assert.equal(verdict.errors.length, 1);
    assert.equal(verdict.errors[0]!.at, 'expression 1');
    assert.match(verdict.errors[0]!.message, /the evaluation was stopped after 10000 steps .*; it counts as false$/);
  });

  test('stays false when cel-js would have absorbed the failure (error || true)', () => {
    const verdict = withItems(RUNTIME_BUDGET, "actions.ngrok.log.metadata.items.exists(x, x == 'z') || conn.client_port > 0");
    assert.equal(verdict.allowed, true);
    assert.match(verdict.errors[0]?.message ?? '', /stopped after/);
  });

  test('is per evaluation: the next connection starts with a full budget', () => {
    const compiled = compilePolicy(metadataPolicy(100, "actions.ngrok.log.metadata.items.all(x, x != 'z')"));
    assert.ok(compiled.ok);
    for (let i = 0; i < 50; i++) assert.equal(evaluate(compiled.program, CONN).allowed, false);
  });

  test('charges a comprehension for its whole range as it starts, before any iteration', () => {
    // exists() would stop at the first element; the range is too long to be started at all.
    const verdict = withItems(RUNTIME_BUDGET, "actions.ngrok.log.metadata.items.exists(x, x == 'a')");
    assert.equal(verdict.allowed, true);
    assert.match(verdict.errors[0]?.message ?? '', /stopped after/);
  });
});
