/**
 * The static worst case of a checked CEL expression, in steps (see cost.ts): a walk of cel-js's
 * AST (`op`, `args`, and the macro expansions it keeps in `meta`) that follows, beside the cost,
 * an upper bound on the size of every value. Comprehensions multiply the cost of their body by the
 * largest length their range can have; literals count as written, `+` adds, `map()` and `filter()`
 * keep their range's length, `cel.bind` carries its value's bound, variables get a default by type.
 */
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
export interface CelNode {
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

export interface Comprehension {
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

export function isNode(value: unknown): value is CelNode {
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
      // The macro's own call node (its `ast`) would lead back here.
      .filter((value): value is CelNode => isNode(value) && value !== node && value.meta?.macro !== macro);
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

