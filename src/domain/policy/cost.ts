/**
 * What a CEL expression may cost (issue 29, item 9). Evaluation is synchronous on the event loop,
 * so one expensive expression stalls every tenant: five nested comprehensions over a literal list
 * of 60 integers passed validation and then ran for minutes.
 *
 * Two bounds, in one unit (a "step": about one AST node evaluated by cel-js):
 * - at validation, a static worst case per expression from its checked AST (cost-estimate.ts). An
 *   expression over MAX_EXPRESSION_COST, or a policy whose expressions add up to more than
 *   MAX_POLICY_COST, is refused;
 * - at run time, a budget per evaluation: each comprehension, as it starts, charges the length of
 *   the range it actually got times the size of its body. Over RUNTIME_BUDGET, the evaluation fails
 *   (the expression counts as false and the failure is reported with the verdict). It catches what
 *   the static bound assumed wrong (a variable larger than its default).
 *
 * cel-js has no cost hooks: the walk reads its AST (`op`, `args`, the macro expansions kept in
 * `meta`), and the run-time charge wraps the `handle` each checked comprehension node evaluates its
 * range with. test/domain/policy/cost.test.ts fails if a cel-js upgrade moves either.
 */
import { scanInterpolations } from './interpolation.js';
import { CODES, fail } from './problem.js';
import { ruleLabel } from './structure.js';
import type { PolicyValue, ValidatedRule } from './types.js';
import { estimateCost, isNode, type CelNode, type Comprehension } from './cost-estimate.js';
import { withFastPath } from './fast-cel.js';

/** Worst-case steps of one expression (about 1 ms of CPU; see docs/POLICY.md "Limits"). */
export const MAX_EXPRESSION_COST = 10_000;

/** Worst-case steps of all the expressions and interpolations of one policy, evaluated once each. */
export const MAX_POLICY_COST = 50_000;

/** Steps one evaluation may charge at run time before it is stopped. */
export const RUNTIME_BUDGET = MAX_EXPRESSION_COST;

// ---------------------------------------------------------------------------------------------
// Run time

/**
 * The steps left to the evaluation under way (none under way: `metering` is false); evaluation is
 * synchronous, so there is one at a time. Plain variables: a budget is set up per expression run.
 */
let metering = false;
let left = 0;

/** Why an evaluation was stopped; `summary` is what the verdict reports (see evaluate.ts). */
export class BudgetExceeded extends Error {
  readonly summary = `the evaluation was stopped after ${RUNTIME_BUDGET} steps (its comprehensions iterate over more than the policy was validated for); it counts as false`;
  constructor() {
    super('CEL evaluation budget exceeded');
    this.name = 'BudgetExceeded';
  }
}

function charge(steps: number): void {
  if (!metering) return;
  left -= steps;
  if (left < 0) throw new BudgetExceeded();
}

type Handle = (items: unknown, ...rest: unknown[]) => unknown;

/**
 * Makes every comprehension of a checked AST charge the current budget, as it starts, for the
 * range it got: its length times the nodes of its body (nested comprehensions charge for their own).
 */
export function meterComprehensions(ast: unknown): void {
  const visit = (node: CelNode): void => {
    forEachChild(node, (child) => {
      if (child.op === 'comprehension') meterOne(child);
      visit(child);
    });
  };
  const root = ast as CelNode;
  if (root.op === 'comprehension') meterOne(root);
  visit(root);
}

function meterOne(node: CelNode): void {
  const inner = node.handle;
  if (typeof inner !== 'function') throw new Error('cel-js changed: a checked comprehension has no handle to meter');
  const body = bodySize((node.args as Comprehension).step) + 1;
  node.handle = ((items: unknown, ...rest: unknown[]) => {
    charge(lengthOf(items) * body);
    return (inner as Handle)(items, ...rest);
  }) satisfies Handle;
}

function lengthOf(items: unknown): number {
  if (Array.isArray(items)) return items.length;
  if (items instanceof Map || items instanceof Set) return items.size;
  return items !== null && typeof items === 'object' ? Object.keys(items).length : 0;
}

/** Nodes a comprehension body evaluates per iteration, not counting nested comprehensions' bodies. */
function bodySize(node: CelNode): number {
  let count = 1;
  forEachChild(node, (child) => {
    count += child.op === 'comprehension' ? 1 : bodySize(child);
  });
  return count;
}

/** The nodes directly below `node`, through macro expansions (a comprehension's step included). */
function forEachChild(node: CelNode, visit: (child: CelNode) => void): void {
  const alternate = node.meta?.alternate;
  if (alternate) return visit(alternate);
  const macro = node.meta?.macro;
  const values = macro ? Object.values(macro) : node.op === 'comprehension' ? Object.values(node.args as object) : [node.args];
  const queue = [...values];
  while (queue.length > 0) {
    const value = queue.pop();
    if (isNode(value)) {
      if (value !== node && (!macro || value.meta?.macro !== macro)) visit(value);
    } else if (Array.isArray(value)) queue.push(...(value as unknown[]));
  }
}

/** `run` with a fresh budget for each call: over it, the call throws BudgetExceeded. */
export function withBudget<A, R>(run: (activation: A) => R): (activation: A) => R {
  // One argument, not a rest parameter: no array per call (this runs for every expression).
  return (activation: A): R => {
    const outerMetering = metering;
    const outerLeft = left;
    metering = true;
    left = RUNTIME_BUDGET;
    try {
      const value = run(activation);
      // A quantifier keeps going after an error in its body, and `true || error` is true: the
      // budget, once exceeded, decides the result whatever cel-js made of it.
      if (left < 0) throw new BudgetExceeded();
      return value;
    } finally {
      metering = outerMetering;
      left = outerLeft;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// The hooks: one for each checked expression, one for each validated policy

/** The static worst case of each expression that went through budgeted(), by its compiled form. */
const costs = new WeakMap<object, number>();

export type Budgeted<F> = { ok: true; compiled: F } | { ok: false; reason: string };

/**
 * For an expression that type-checked: the reason it is refused (completing "the expression … is
 * not valid: …"), or `parsed` wrapped with a run-time budget and its comprehensions metered.
 */
export function budgeted<A, R>(ast: unknown, parsed: (activation: A) => R): Budgeted<(activation: A) => R> {
  const estimate = estimateCost(ast);
  if (!(estimate.cost <= MAX_EXPRESSION_COST)) {
    const why =
      estimate.repeats > 1
        ? `its comprehensions may run their innermost body ${steps(estimate.repeats)} times; iterate over shorter lists or nest fewer comprehensions`
        : 'it builds or reads very large values; use shorter lists and strings';
    return { ok: false, reason: `it could take up to ${steps(estimate.cost)} steps to evaluate, more than the ${steps(MAX_EXPRESSION_COST)} allowed per expression: ${why}.` };
  }
  meterComprehensions(ast);
  const budgetedRun = withBudget(parsed);
  // The simplest shapes skip cel-js (and need no budget: they iterate over nothing).
  const compiled = withFastPath(ast, budgetedRun) ?? budgetedRun;
  costs.set(compiled, estimate.cost);
  return { ok: true, compiled };
}

/**
 * Refuses a phase whose expressions and interpolations, each evaluated once for a connection (or,
 * in an HTTP phase, a request), could cost more than MAX_POLICY_COST together. `compiledOf` gives
 * what budgeted() returned for each one's text in this phase.
 */
export function checkPolicyCost(rules: readonly ValidatedRule[], compiledOf: (expression: string) => object | undefined): void {
  const costOf = (expression: string): number => {
    const run = compiledOf(expression);
    return (run && costs.get(run)) ?? 0;
  };
  let total = 0;
  let worst = { cost: -1, where: '' };
  rules.forEach((rule, index) => {
    const label = ruleLabel(index + 1, rule.name);
    const add = (cost: number, where: string): void => {
      total += cost;
      if (cost > worst.cost) worst = { cost, where: `${label}, ${where}` };
    };
    rule.expressions.forEach((expression, e) => add(costOf(expression), `expression ${e + 1}`));
    rule.actions.forEach((action, a) => {
      for (const expression of interpolationsIn(action.config as PolicyValue)) add(costOf(expression), `action ${a + 1}`);
    });
  });
  if (total > MAX_POLICY_COST) {
    fail(
      CODES.celInvalid,
      `The expressions of this traffic policy could take up to ${steps(total)} steps together to evaluate for one connection, more than the ${steps(MAX_POLICY_COST)} allowed; the most expensive is in ${worst.where} (${steps(worst.cost)} steps). Simplify or remove expressions.`,
    );
  }
}

/** The `${...}` expressions in a config value, at any depth. */
function interpolationsIn(value: PolicyValue): string[] {
  if (typeof value === 'string') {
    const scan = value.includes('${') ? scanInterpolations(value) : undefined;
    return scan?.ok ? scan.parts.map((part) => part.expression) : [];
  }
  if (Array.isArray(value)) return value.flatMap(interpolationsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(interpolationsIn);
  return [];
}

function steps(n: number): string {
  return n >= 1e15 ? 'more than 10^15' : Math.ceil(n).toLocaleString('en-US');
}
