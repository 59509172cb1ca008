/**
 * What a CEL expression may cost (issue 29, item 9). Evaluation is synchronous on the event loop,
 * so one expensive expression stalls every tenant: five nested comprehensions over a literal list
 * of 60 integers passed validation and then ran for minutes.
 *
 * Two bounds, in one unit (a "step": about one AST node evaluated by cel-js):
 * - at validation, a static worst case per expression, from its checked AST: comprehensions multiply
 *   the cost of their body by the largest size their range can have, and values are followed with
 *   an upper bound on their size (literals as written, `+` adds, `map()` keeps the length, variables
 *   get a generous default by type). An expression over MAX_EXPRESSION_COST, or a policy whose
 *   expressions add up to more than MAX_POLICY_COST, is refused;
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

/** Worst-case steps of one expression (about 1 ms of CPU on a quiet core; see docs/POLICY.md "Limits"). */
export const MAX_EXPRESSION_COST = 10_000;

/** Worst-case steps of all the expressions and interpolations of one policy, evaluated once each. */
export const MAX_POLICY_COST = 50_000;

/** Steps one evaluation may charge at run time before it is stopped. */
export const RUNTIME_BUDGET = MAX_EXPRESSION_COST;

/**
 * Relative costs, measured on cel-js 8 and Node 20: copying or comparing one element of a list, one
 * character of a string; searching a string for another (contains, indexOf, split: V8 takes up to
 * ~15 ns a character on 'aaa…' for 'ab'); RE2 (re2js) matching one character of text for each
 * character of the pattern (up to ~45 ns on '^(a+)+$' or '[a-q][^u-z]{13}x').
 */
const PER_ELEMENT = 0.1;
const PER_CHAR = 0.01;
const SEARCH_PER_CHAR = 0.2;
const REGEX_PER_CHAR = 0.25;

/**
 * Sizes assumed for values that come from outside the expression (variables), whose size the
 * policy does not fix: strings (addresses, names, URLs) and the entries of a list or map.
 */
const EXTERNAL_STRING = 128;
const EXTERNAL_ENTRIES = 100;

/**
 * An upper bound on a value: `len` is its length (characters, elements, entries; 1 for a scalar),
 * `deep` its total size counting every nested element and character, `item` the bound of each
 * element of a list or value of a map, `key` of each key of a map (what a comprehension over it
 * iterates), `text` whether it is a string or bytes.
 */
interface Bound {
  len: number;
  deep: number;
  item?: Bound;
  key?: Bound;
  text?: boolean;
}

const SCALAR: Bound = { len: 1, deep: 1 };

/** A value of any shape whose total size is at most `deep` (its elements are too). */
function within(deep: number): Bound {
  const bound: Bound = { len: deep, deep };
  bound.item = bound;
  return bound;
}

function text(len: number): Bound {
  return { len, deep: Math.max(len, 1), text: true };
}

/** The bound of either value (a `?:`, the elements of a list literal). */
function join(a: Bound, b: Bound, depth = 0): Bound {
  if (a === b) return a;
  const out: Bound = { len: Math.max(a.len, b.len), deep: Math.max(a.deep, b.deep) };
  if (a.text && b.text) out.text = true;
  if (depth > 8) return within(out.deep);
  if (a.item || b.item) out.item = a.item && b.item ? join(a.item, b.item, depth + 1) : (a.item ?? b.item);
  if (a.key || b.key) out.key = a.key && b.key ? join(a.key, b.key, depth + 1) : (a.key ?? b.key);
  return out;
}

/** What reading every element or character of a value costs. */
function scan(bound: Bound): number {
  return bound.deep * (bound.text ? PER_CHAR : PER_ELEMENT);
}

/** The slice of cel-js's AST node read here (see its lib/parser.js, ASTNode). */
interface CelNode {
  op: string;
  args: unknown;
  meta?: { alternate?: CelNode; macro?: Record<string, unknown> };
  checkedType?: CelType;
  handle?: unknown;
}

interface CelType {
  kind: string;
  name: string;
  keyType?: CelType;
  valueType?: CelType;
}

interface Comprehension {
  iterable: CelNode;
  iterVarName: string;
  init: CelNode;
  step: CelNode;
}

/** string, bytes, int…, list, map, dyn, message: cel-js files the scalar types under kind 'primitive'. */
function kindOf(type: CelType | undefined): string {
  if (!type) return 'dyn';
  return type.kind === 'primitive' ? type.name : type.kind === 'param' ? 'dyn' : type.kind;
}

function isNode(value: unknown): value is CelNode {
  return value !== null && typeof value === 'object' && typeof (value as { op?: unknown }).op === 'string';
}

/** A variable's assumed bound, from its checked type. */
function external(type: CelType | undefined, depth = 0): Bound {
  switch (kindOf(type)) {
    case 'string':
    case 'bytes':
      return text(EXTERNAL_STRING);
    case 'list':
    case 'map': {
      if (depth > 4) return within(EXTERNAL_STRING);
      const item = external(type?.valueType, depth + 1);
      const key = type?.kind === 'map' ? external(type.keyType, depth + 1) : undefined;
      const deep = EXTERNAL_ENTRIES * (item.deep + (key?.deep ?? 0) + 1);
      return { len: EXTERNAL_ENTRIES, deep, item, ...(key ? { key } : {}) };
    }
    case 'dyn':
      // Values of unknown type (a log metadata value) are mostly short strings; a longer list is
      // caught by the run-time budget when a comprehension goes over it.
      return within(EXTERNAL_STRING);
    default:
      // int, bool, timestamp…, and messages (conn, conn.geo): their fields are read by type.
      return SCALAR;
  }
}

interface Estimate {
  cost: number;
  bound: Bound;
}

/** The names in scope: comprehension and bind variables, and the accumulator of the innermost comprehension. */
interface Scope {
  names: ReadonlyMap<string, Bound>;
  /** Elements the enclosing map()/filter() may push (joined as the step is walked). */
  pushed?: { item?: Bound };
  accu: Bound;
}

export interface CostEstimate {
  /** Worst-case steps of one evaluation. */
  cost: number;
  /** The most times one comprehension body may run in one evaluation (1 when there is none). */
  repeats: number;
}

/** The static worst case of a checked expression. */
export function estimateCost(ast: unknown): CostEstimate {
  const walker = new Walker();
  const top = walker.walk(ast as CelNode, { names: new Map(), accu: SCALAR }, 1);
  // Interpolations turn their value into text, and restrict-ips reads every element: one pass over it.
  return { cost: top.cost + scan(top.bound), repeats: walker.repeats };
}

class Walker {
  repeats = 1;

  walk(node: CelNode, scope: Scope, repeats: number): Estimate {
    const alternate = node.meta?.alternate;
    if (alternate) return this.walk(alternate, scope, repeats);
    const macro = node.meta?.macro;
    if (macro) return this.macro(node, macro, scope, repeats);
    const args = node.args;
    const sub = (child: unknown): Estimate => (isNode(child) ? this.walk(child, scope, repeats) : { cost: 0, bound: SCALAR });
    switch (node.op) {
      case 'value':
        return { cost: 1, bound: literal(args) };
      case 'id': {
        const name = String(args);
        return { cost: 1, bound: scope.names.get(name) ?? external(node.checkedType) };
      }
      case 'accuValue':
      case 'accuInc':
        return { cost: 1, bound: scope.accu };
      case 'accuPush': {
        const value = sub(args);
        if (scope.pushed) scope.pushed.item = scope.pushed.item ? join(scope.pushed.item, value.bound) : value.bound;
        return { cost: value.cost + 1 + PER_ELEMENT, bound: scope.accu };
      }
      case 'comprehension':
        return this.comprehension(args as Comprehension, scope, repeats);
      case 'list':
      case 'map': {
        // A map literal's entries are [key, value] pairs.
        const entries = (args as unknown[]).map((entry) => (Array.isArray(entry) ? entry : [undefined, entry]) as [unknown, unknown]);
        let cost = 1 + entries.length * PER_ELEMENT;
        let deep = 1;
        let item: Bound | undefined;
        let key: Bound | undefined;
        for (const [k, v] of entries) {
          const value = sub(v);
          cost += value.cost;
          deep += value.bound.deep;
          item = item ? join(item, value.bound) : value.bound;
          if (k === undefined) continue;
          const name = sub(k);
          cost += name.cost;
          deep += name.bound.deep;
          key = key ? join(key, name.bound) : name.bound;
        }
        return { cost, bound: { len: entries.length, deep, ...(item ? { item } : {}), ...(key ? { key } : {}) } };
      }
      case '.':
      case '.?': {
        const [object] = args as [CelNode, string];
        const o = sub(object);
        return { cost: o.cost + 1, bound: member(o.bound, node.checkedType) };
      }
      case '[]':
      case '[?]': {
        const [object, index] = args as [CelNode, CelNode];
        const o = sub(object);
        const i = sub(index);
        return { cost: o.cost + i.cost + 1, bound: member(o.bound, node.checkedType) };
      }
      case '?:': {
        const [condition, left, right] = (args as CelNode[]).map(sub) as [Estimate, Estimate, Estimate];
        return { cost: condition.cost + Math.max(left.cost, right.cost) + 1, bound: join(left.bound, right.bound) };
      }
      case 'call':
      case 'rcall': {
        const list = args as unknown[];
        const name = String(list[0]);
        const receiver = node.op === 'rcall' ? sub(list[1]) : undefined;
        const params = ((node.op === 'rcall' ? list[2] : list[1]) as unknown[]).map(sub);
        return callCost(name, receiver, params, node.checkedType);
      }
      default:
        return operator(node.op, (Array.isArray(args) ? args : [args]).map(sub), node.checkedType);
    }
  }

  private comprehension(c: Comprehension, scope: Scope, repeats: number): Estimate {
    const range = this.walk(c.iterable, scope, repeats);
    const init = this.walk(c.init, scope, repeats);
    const len = range.bound.len;
    const inner = repeats * len;
    this.repeats = Math.max(this.repeats, inner);
    const collects = c.init.op === 'list';
    const pushed: { item?: Bound } = {};
    const accu: Bound = collects ? { len, deep: len, item: within(range.bound.deep) } : SCALAR;
    const names = new Map(scope.names).set(c.iterVarName, range.bound.key ?? range.bound.item ?? within(range.bound.deep));
    const step = this.walk(c.step, { names, accu, ...(collects ? { pushed } : {}) }, inner);
    const result = collects && pushed.item ? { len, deep: len * (pushed.item.deep + 1), item: pushed.item } : accu;
    return { cost: range.cost + init.cost + len * (step.cost + 1), bound: result };
  }

  private macro(node: CelNode, macro: Record<string, unknown>, scope: Scope, repeats: number): Estimate {
    // cel.bind(name, value, expression): the name holds the value's bound inside the expression.
    if (typeof macro.var === 'string' && isNode(macro.val) && isNode(macro.exp)) {
      const value = this.walk(macro.val, scope, repeats);
      const names = new Map(scope.names).set(macro.var, value.bound);
      const body = this.walk(macro.exp, { ...scope, names }, repeats);
      return { cost: value.cost + body.cost + 1, bound: body.bound };
    }
    // Any other macro (has(), matches()): the cost of every node it holds, and its operands' sizes.
    const parts = Object.values(macro)
      .flatMap((value) => (Array.isArray(value) ? value : [value]))
      .filter((value): value is CelNode => isNode(value) && value !== node);
    const estimates = parts.map((part) => this.walk(part, scope, repeats));
    const cost = estimates.reduce((sum, e) => sum + e.cost, 1);
    if (isNode(macro.receiver) && isNode(macro.pattern)) {
      // RE2 runs in time linear in the text, times a factor that grows with the pattern.
      const [subject, pattern] = [estimates[parts.indexOf(macro.receiver)]!, estimates[parts.indexOf(macro.pattern)]!];
      return { cost: cost + subject.bound.len * (1 + pattern.bound.len * REGEX_PER_CHAR), bound: SCALAR };
    }
    return { cost, bound: kindOf(node.checkedType) === 'bool' ? SCALAR : within(estimates.reduce((sum, e) => sum + e.bound.deep, 1)) };
  }
}

function literal(value: unknown): Bound {
  if (typeof value === 'string') return text(value.length);
  if (value instanceof Uint8Array) return text(value.length);
  return SCALAR;
}

/** The bound of a field or an element read from a value. */
function member(object: Bound, type: CelType | undefined): Bound {
  if (object.item) return object.item;
  return external(type);
}

function operator(op: string, operands: Estimate[], type: CelType | undefined): Estimate {
  const cost = operands.reduce((sum, e) => sum + e.cost, 1);
  const [a, b] = operands.map((e) => e.bound) as [Bound, Bound | undefined];
  switch (op) {
    case '+': {
      // Numbers, timestamps and durations add up to a scalar; strings, bytes and lists concatenate.
      const concatenates = ['string', 'bytes', 'list', 'dyn'].includes(kindOf(type));
      if (!b || !concatenates) return { cost, bound: SCALAR };
      const item = a.item && b.item ? join(a.item, b.item) : (a.item ?? b.item);
      const bound: Bound = { len: a.len + b.len, deep: a.deep + b.deep, ...(item ? { item } : {}), ...(a.text || b.text ? { text: true } : {}) };
      return { cost: cost + scan(bound), bound };
    }
    case '==':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=':
      return { cost: cost + (b ? scan(a.deep <= b.deep ? a : b) : 0), bound: SCALAR };
    case 'in': {
      if (!b) return { cost, bound: SCALAR };
      // A list compares the value with each element; a map looks the key up.
      const each = b.key ? 0 : PER_ELEMENT + (b.item ? scan(a.deep <= b.item.deep ? a : b.item) : scan(a));
      return { cost: cost + scan(a) + b.len * each, bound: SCALAR };
    }
    default:
      // !, unary -, &&, ||, arithmetic on numbers, timestamps and durations.
      return { cost, bound: SCALAR };
  }
}

/** Costs of the functions a policy can call, by name; anything else reads its operands once. */
function callCost(name: string, receiver: Estimate | undefined, params: Estimate[], type: CelType | undefined): Estimate {
  const operands = receiver ? [receiver, ...params] : params;
  const cost = operands.reduce((sum, e) => sum + e.cost, 1);
  const [first, second, third] = operands.map((e) => e.bound);
  const size = (bound: Bound | undefined): number => bound?.len ?? 1;
  const reads = operands.reduce((sum, e) => sum + scan(e.bound), 0);
  switch (name) {
    case 'contains':
    case 'indexOf':
    case 'lastIndexOf':
      return { cost: cost + reads + size(first) * SEARCH_PER_CHAR, bound: SCALAR };
    case 'size':
    case 'dyn':
      return { cost, bound: name === 'dyn' && first ? first : SCALAR };
    case 'lowerAscii':
    case 'upperAscii':
    case 'trim':
    case 'substring':
      // Lower- or upper-casing can lengthen a string (ß → SS): three times is the worst case.
      return { cost: cost + reads, bound: text(size(first) * (name === 'trim' || name === 'substring' ? 1 : 3)) };
    case 'replace': {
      // An empty search string inserts the replacement between every two characters.
      const len = (size(first) + 1) * (size(third) + 1);
      return { cost: cost + reads + len * PER_CHAR, bound: text(len) };
    }
    case 'split': {
      const len = size(first);
      return { cost: cost + reads + len * SEARCH_PER_CHAR + (len + 1) * PER_ELEMENT, bound: { len: len + 1, deep: 2 * len + 1, item: text(len) } };
    }
    case 'join': {
      const list = first ?? SCALAR;
      const len = list.deep + list.len * size(second);
      return { cost: cost + reads + len * PER_CHAR, bound: text(len) };
    }
    case 'string':
    case 'bytes':
    case 'hex':
    case 'base64':
      // Numbers print in at most a few dozen characters; bytes as hex or base64 in twice their length.
      return { cost: cost + reads, bound: text(3 * (first?.deep ?? 1) + 32) };
    case 'json':
      return { cost: cost + reads, bound: within(first?.deep ?? 1) };
    case 'inCidrRange':
      return { cost: cost + reads + 5, bound: SCALAR };
    case 'inCidrRanges':
      return { cost: cost + reads + 5 * size(second), bound: SCALAR };
    default: {
      // Another function (a conversion, a timestamp accessor, a predicate): at most its operands' size.
      const sized = ['string', 'bytes', 'list', 'map', 'dyn'].includes(kindOf(type));
      return { cost: cost + reads, bound: sized ? within(operands.reduce((sum, e) => sum + e.bound.deep, 32)) : SCALAR };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Run time

/** The budget of the evaluation under way; evaluation is synchronous, so there is one at a time. */
let meter: { left: number } | undefined;

/** Why an evaluation was stopped; `summary` is what the verdict reports (see evaluate.ts). */
export class BudgetExceeded extends Error {
  readonly summary = `the evaluation was stopped after ${RUNTIME_BUDGET} steps (its comprehensions iterate over more than the policy was validated for); it counts as false`;
  constructor() {
    super('CEL evaluation budget exceeded');
    this.name = 'BudgetExceeded';
  }
}

function charge(steps: number): void {
  if (!meter) return;
  meter.left -= steps;
  if (meter.left < 0) throw new BudgetExceeded();
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
      if (value !== node) visit(value);
    } else if (Array.isArray(value)) queue.push(...(value as unknown[]));
  }
}

/** `run` with a fresh budget for each call: over it, the call throws BudgetExceeded. */
export function withBudget<A extends unknown[], R>(run: (...args: A) => R): (...args: A) => R {
  return (...args: A): R => {
    const outer = meter;
    const mine = { left: RUNTIME_BUDGET };
    meter = mine;
    try {
      const value = run(...args);
      // A quantifier keeps going after an error in its body, and `true || error` is true: the
      // budget, once exceeded, decides the result whatever cel-js made of it.
      if (mine.left < 0) throw new BudgetExceeded();
      return value;
    } finally {
      meter = outer;
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
  const compiled = withBudget(parsed);
  costs.set(compiled, estimate.cost);
  return { ok: true, compiled };
}

/**
 * Refuses a policy whose expressions and interpolations, each evaluated once for a connection,
 * could cost more than MAX_POLICY_COST together. `compiled` maps each one's text to what budgeted() returned.
 */
export function checkPolicyCost(rules: readonly ValidatedRule[], compiled: ReadonlyMap<string, object>): void {
  const costOf = (expression: string): number => {
    const run = compiled.get(expression);
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
