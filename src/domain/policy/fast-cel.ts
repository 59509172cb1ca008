/**
 * The commonest expression shapes evaluated without cel-js: a field path (`conn.client_ip`), one
 * compared with a literal (`req.method == 'GET'`, `conn.client_port > 0`), a key tested in a map
 * (`'x-a' in req.headers`), and `&&`/`||` of those. cel-js spends about a microsecond setting up
 * each evaluation, and a policy runs a dozen expressions per request.
 *
 * Exact or nothing: compiled only from a checked AST whose every node is one of those shapes with
 * the types cel-js inferred (field paths through objects to a string, int or bool; literals of the
 * same type). At run time, any value that is not what the types promise (a missing field, a value
 * of another type) makes the whole expression go to cel-js instead, which then answers (or fails)
 * as it always did. test/domain/policy/fast-cel.test.ts compares both on many activations.
 */

import { isNode, type CelNode } from './cost-estimate.js';

/** A fast evaluator's answer when the activation is not what it can read: cel-js decides. */
const DEFER = Symbol('defer');

type Fast = (activation: Record<string, unknown>) => unknown;

type Node = CelNode;

const SCALAR_TYPES = new Set(['string', 'int', 'bool']);
const COMPARISONS = new Set(['==', '!=', '<', '<=', '>', '>=']);

function typeName(node: Node): string | undefined {
  return node.checkedType?.name;
}

/** `run` with the fast evaluation in front when `ast` has only the shapes above, else undefined. */
export function withFastPath<A, R>(ast: unknown, run: (activation: A) => R): ((activation: A) => R) | undefined {
  const fast = isNode(ast) ? compile(ast) : undefined;
  if (fast === undefined) return undefined;
  return (activation: A): R => {
    const value = fast(activation as Record<string, unknown>);
    return value === DEFER ? run(activation) : (value as R);
  };
}

function compile(node: Node): Fast | undefined {
  if (COMPARISONS.has(node.op)) return comparison(node);
  switch (node.op) {
    case '.':
      return SCALAR_TYPES.has(typeName(node) ?? '') ? leaf(node) : undefined;
    case 'in':
      return membership(node);
    case '&&':
    case '||':
      return logical(node);
    default:
      return undefined;
  }
}

/** The field names from the root variable to `node` (`['conn', 'client_ip']`), when every step is an object's field. */
function pathOf(node: Node): string[] | undefined {
  if (node.op === 'id') return typeof node.args === 'string' && typeName(node)?.startsWith('$') ? [node.args] : undefined;
  if (node.op !== '.' || !Array.isArray(node.args)) return undefined;
  const [object, field] = node.args as [unknown, unknown];
  if (!isNode(object) || typeof field !== 'string') return undefined;
  // every step before the last is an object (a message type, named `$…` by cel-js)
  if (object.op === '.' && !typeName(object)?.startsWith('$')) return undefined;
  const head = pathOf(object);
  return head && [...head, field];
}

/**
 * An activation may also offer its variables as written under this key (plain objects whose
 * fields hold what cel-js's typed form would read): reading those spares converting them.
 */
export const PLAIN_VARIABLES = Symbol('plain variables');

/** Reads a path in the activation as cel-js would (typed values are Maps, plain ones objects); undefined when a step is missing. */
function read(activation: Record<string, unknown>, path: readonly string[]): unknown {
  const plain = (activation as { [PLAIN_VARIABLES]?: Record<string, unknown> })[PLAIN_VARIABLES];
  let value: unknown = (plain ?? activation)[path[0]!];
  for (let i = 1; i < path.length; i++) {
    if (value instanceof Map) value = value.get(path[i]!);
    else if (value !== null && typeof value === 'object' && isPlain(value)) value = (value as Record<string, unknown>)[path[i]!];
    else return undefined;
  }
  return value;
}

function isPlain(value: object): boolean {
  const constructor = (value as { constructor?: unknown }).constructor;
  return constructor === Object || constructor === undefined;
}

const JS_TYPES: Record<string, string> = { string: 'string', int: 'bigint', bool: 'boolean' };

function leaf(node: Node): Fast | undefined {
  const path = pathOf(node);
  const type = JS_TYPES[typeName(node) ?? ''];
  if (!path || path.length < 2 || type === undefined) return undefined;
  return (activation) => {
    const value = read(activation, path);
    return typeof value === type ? value : DEFER;
  };
}

function literal(node: Node): { value: unknown; type: string } | undefined {
  if (node.op !== 'value') return undefined;
  const type = JS_TYPES[typeName(node) ?? ''];
  return type !== undefined && typeof node.args === type ? { value: node.args, type } : undefined;
}

function comparison(node: Node): Fast | undefined {
  if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
  const [left, right] = node.args as [unknown, unknown];
  if (!isNode(left) || !isNode(right)) return undefined;
  // a path against a literal of its own type, on either side
  const pathLeft = literal(right) !== undefined;
  const path = pathLeft ? left : right;
  const constant = literal(pathLeft ? right : left);
  if (!constant || path.op !== '.' || typeName(path) !== typeName(pathLeft ? right : left)) return undefined;
  // ordering only between ints (strings order by code point in CEL, by UTF-16 unit in JavaScript)
  const ordered = node.op !== '==' && node.op !== '!=';
  if (ordered && constant.type !== 'bigint') return undefined;
  const read = leaf(path);
  if (!read) return undefined;
  const c = constant.value as bigint;
  const test = compare(node.op, pathLeft);
  return (activation) => {
    const value = read(activation);
    return value === DEFER ? DEFER : test(value as bigint, c);
  };
}

/** `op` applied as written: `value op c` when the path is on the left, `c op value` otherwise. */
function compare(op: string, pathLeft: boolean): (value: bigint, c: bigint) => boolean {
  switch (op) {
    case '==':
      return (v, c) => v === c;
    case '!=':
      return (v, c) => v !== c;
    case '<':
      return pathLeft ? (v, c) => v < c : (v, c) => c < v;
    case '<=':
      return pathLeft ? (v, c) => v <= c : (v, c) => c <= v;
    case '>':
      return pathLeft ? (v, c) => v > c : (v, c) => c > v;
    default:
      return pathLeft ? (v, c) => v >= c : (v, c) => c >= v;
  }
}

/** `'key' in a.b`, where a.b is a map with string keys. */
function membership(node: Node): Fast | undefined {
  if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
  const [key, container] = node.args as [unknown, unknown];
  if (!isNode(key) || !isNode(container)) return undefined;
  const constant = literal(key);
  if (!constant || constant.type !== 'string' || container.checkedType?.kind !== 'map' || !typeName(container)?.startsWith('map<string,')) return undefined;
  const path = container.op === '.' ? pathOf(container) : undefined;
  if (!path || path.length < 2) return undefined;
  const k = constant.value as string;
  return (activation) => {
    const map = read(activation, path);
    return map instanceof Map && map.constructor === Map ? map.has(k) : DEFER;
  };
}

function logical(node: Node): Fast | undefined {
  if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
  const [left, right] = (node.args as unknown[]).map((arg) => (isNode(arg) && typeName(arg) === 'bool' ? compile(arg) : undefined));
  if (!left || !right) return undefined;
  // Neither side can fail (a surprise defers the whole expression), so CEL's && and || are JavaScript's.
  if (node.op === '&&') {
    return (activation) => {
      const a = left(activation);
      if (a === DEFER) return DEFER;
      if (a === false) return false;
      return right(activation);
    };
  }
  return (activation) => {
    const a = left(activation);
    if (a === DEFER) return DEFER;
    if (a === true) return true;
    return right(activation);
  };
}
