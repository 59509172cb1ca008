// @test-pass sqlite
// The CEL cost bound (issue 29, item 9) against random expressions built to be expensive:
// comprehensions nested over literal lists of random length, lists grown by map(), filter(), `+`
// and cel.bind, long strings and regular expressions. Whatever validation accepts evaluates in a
// few milliseconds, and never trips the run-time budget (over literals, the static estimate is an
// upper bound of what the run-time budget charges); what it refuses, it refuses with the
// expression's code. FUZZ_RUNS / FUZZ_SEED as in world.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compilePolicy, evaluate, validatePolicy } from '../../src/domain/policy/index.js';
import { POLICY_CONNECTION as CONN } from '../helpers/policy.js';
import { params } from './world.js';

/**
 * "A few ms": an expression may cost 10,000 steps and a policy 50,000, at most about 1 ms and 5 ms
 * of CPU on this machine's cores (far less for most: steps are counted for the worst case).
 */
const MAX_EVALUATION_MS = 10;

type Gen = fc.GeneratorValue;

/** Lengths skewed towards what makes nesting expensive, up to cel-js's 1,000 elements per literal. */
const length = fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 20, max: 120 }), fc.integer({ min: 200, max: 900 }));

function intList(g: Gen, depth: number, lists: string[]): string {
  const choice = g(fc.integer, { min: 0, max: depth > 3 ? 1 : 5 });
  if (choice === 0 && lists.length > 0) return g(fc.constantFrom, ...lists);
  switch (choice) {
    case 0:
    case 1:
      return `[${Array.from({ length: g(() => length) }, (_, i) => i).join(', ')}]`;
    case 2:
      return `${intList(g, depth + 1, lists)}.map(m${depth}, m${depth} * 2)`;
    case 3:
      return `${intList(g, depth + 1, lists)}.filter(f${depth}, f${depth} % 3 != 1)`;
    case 4:
      return `(${intList(g, depth + 1, lists)} + ${intList(g, depth + 1, lists)})`;
    default:
      return `cel.bind(l${depth}, ${intList(g, depth + 1, lists)}, l${depth} + l${depth})`;
  }
}

function text(g: Gen, depth: number): string {
  const choice = g(fc.integer, { min: 0, max: depth > 3 ? 1 : 3 });
  switch (choice) {
    case 0:
      return 'conn.client_ip';
    case 1:
      return `'${'a'.repeat(g(fc.integer, { min: 0, max: 6000 }))}!'`;
    case 2:
      return `(${text(g, depth + 1)} + ${text(g, depth + 1)})`;
    default:
      return `${text(g, depth + 1)}.lowerAscii()`;
  }
}

function predicate(g: Gen, depth: number, ints: string[], lists: string[]): string {
  const choice = g(fc.integer, { min: 0, max: depth > 4 ? 3 : 9 });
  const someInt = () => (ints.length > 0 ? g(fc.constantFrom, ...ints) : 'conn.client_port');
  switch (choice) {
    case 0:
      return `${someInt()} > ${g(fc.integer, { min: -5, max: 900 })}`;
    case 1:
      return `${someInt()} in ${intList(g, depth + 1, lists)}`;
    case 2:
      return `size(${intList(g, depth + 1, lists)}) > ${g(fc.nat, { max: 900 })}`;
    case 3:
      return g(
        fc.constantFrom,
        `${text(g, depth + 1)}.matches('^(a+)+$')`,
        `${text(g, depth + 1)}.matches('[a-q][^u-z]{13}x')`,
        `${text(g, depth + 1)}.contains('ab')`,
        `${text(g, depth + 1)}.indexOf('ab') > 0`,
        `${text(g, depth + 1)}.split('b').size() > 1`,
      );
    case 4:
    case 5:
    case 6: {
      const name = `v${depth}`;
      const macro = g(fc.constantFrom, 'all', 'exists', 'exists_one');
      return `${intList(g, depth + 1, lists)}.${macro}(${name}, ${predicate(g, depth + 1, [...ints, name], lists)})`;
    }
    case 7:
      return `cel.bind(b${depth}, ${intList(g, depth + 1, lists)}, ${predicate(g, depth + 1, ints, [...lists, `b${depth}`])})`;
    case 8:
      return `(${predicate(g, depth + 1, ints, lists)} && ${predicate(g, depth + 1, ints, lists)})`;
    default:
      return `(${predicate(g, depth + 1, ints, lists)} || !${predicate(g, depth + 1, ints, lists)})`;
  }
}

function policyOf(expressions: string[], interpolated: string | null): string {
  const actions = interpolated === null ? [{ type: 'deny' }] : [{ type: 'log', config: { metadata: { v: `\${${interpolated}}` } } }];
  return JSON.stringify({ on_tcp_connect: expressions.map((expression) => ({ expressions: [expression], actions })) });
}

/**
 * The CPU time of the cheapest of a few evaluations, in ms: CPU rather than wall-clock time, which
 * on a loaded machine counts the time the process waited for a core; what stalls the event loop on
 * a machine of its own is the CPU an evaluation needs.
 */
function evaluationMs(run: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 3 && best > MAX_EVALUATION_MS / 4; i++) {
    const before = process.cpuUsage();
    run();
    const used = process.cpuUsage(before);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

describe('CEL cost bound', () => {
  it('no accepted policy takes more than a few ms per evaluation, nor trips the run-time budget', (t) => {
    let accepted = 0;
    let refusedForCost = 0;
    let slowest = 0;
    fc.assert(
      fc.property(fc.gen(), fc.integer({ min: 1, max: 6 }), fc.boolean(), (g, rules, interpolate) => {
        const expressions = Array.from({ length: rules }, () => predicate(g, 0, [], []));
        const source = policyOf(expressions, interpolate ? intList(g, 0, []) : null);
        const validation = validatePolicy(source);
        if (!validation.ok) {
          assert.match(validation.error.code, /^ERR_NGROK_22(00|24|21)$/, validation.error.message);
          if (/steps/.test(validation.error.message)) refusedForCost++;
          return;
        }
        accepted++;
        const program = compilePolicy(validation.policy);
        let errors: string[] = [];
        const ms = evaluationMs(() => {
          errors = evaluate(program, CONN).errors.map((e) => e.message);
        });
        assert.deepEqual(errors.filter((e) => /stopped after/.test(e)), [], `the static estimate was below what the run-time budget charged: ${source.slice(0, 400)}`);
        assert.ok(ms <= MAX_EVALUATION_MS, `an accepted policy took ${ms.toFixed(1)} ms of CPU to evaluate: ${source.slice(0, 400)}`);
        slowest = Math.max(slowest, ms);
      }),
      params(300, 290_009),
    );
    t.diagnostic(`accepted ${accepted}, refused for their cost ${refusedForCost}; slowest accepted evaluation ${slowest.toFixed(2)} ms of CPU`);
    // The generator must reach both sides of the bound, or the property says little.
    assert.ok(accepted > 50 && refusedForCost > 20, `accepted ${accepted}, refused for their cost ${refusedForCost}`);
  });
});
