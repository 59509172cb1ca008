/**
 * The reference's HTTP macros (its "Macros" page): `hasReqHeader('x')`, `getReqHeader('x')`,
 * `hasQueryParam`, `getQueryParam`, `hasReqCookie`, `getReqCookie`, and in on_http_response
 * `hasResHeader`, `getResHeader`. Each reads a map variable (`req.headers`, …) that CEL functions
 * cannot see, so each is registered as a cel-js macro that type-checks and evaluates that
 * variable's own expression, parsed once, beside its argument. Header names are case-insensitive.
 */
import type { Environment } from '@marcbachmann/cel-js';

interface CelNode {
  op: string;
  args: unknown;
}
interface CelType {
  type: string;
  kind: string;
  name: string;
  valueType?: CelType;
}
interface Checker {
  check(node: CelNode, ctx: unknown): CelType;
  createError(code: string, message: string, node: unknown): Error;
  boolType: CelType;
}
interface Evaluator {
  run(node: CelNode, ctx: unknown): unknown;
}

interface MacroSpec {
  readonly name: string;
  /** The map the macro reads, as a CEL expression of the phase. */
  readonly source: string;
  readonly lowerCase: boolean;
  /** has…: whether the key is present; get…: its value (`empty` when absent). */
  readonly kind: 'has' | 'get';
}

const REQUEST_MACROS: readonly MacroSpec[] = [
  { name: 'hasReqHeader', source: 'req.headers', lowerCase: true, kind: 'has' },
  { name: 'getReqHeader', source: 'req.headers', lowerCase: true, kind: 'get' },
  { name: 'hasQueryParam', source: 'req.url.query_params', lowerCase: false, kind: 'has' },
  { name: 'getQueryParam', source: 'req.url.query_params', lowerCase: false, kind: 'get' },
  { name: 'hasReqCookie', source: 'req.cookies', lowerCase: false, kind: 'has' },
  { name: 'getReqCookie', source: 'req.cookies', lowerCase: false, kind: 'get' },
];

const RESPONSE_MACROS: readonly MacroSpec[] = [
  { name: 'hasResHeader', source: 'res.headers', lowerCase: true, kind: 'has' },
  { name: 'getResHeader', source: 'res.headers', lowerCase: true, kind: 'get' },
];

export function registerHttpMacros(env: Environment, response: boolean): void {
  for (const spec of response ? [...REQUEST_MACROS, ...RESPONSE_MACROS] : REQUEST_MACROS) register(env, spec);
}

function register(env: Environment, spec: MacroSpec): void {
  let source: CelNode | undefined;
  // Parsed on first use: the variables must be registered before the expression can be.
  const sourceNode = (): CelNode => (source ??= env.parse(spec.source).ast as CelNode);
  env.registerFunction(
    `${spec.name}(ast): ${spec.kind === 'has' ? 'bool' : 'dyn'}`,
    ({ ast, args }: { ast: CelNode; args: CelNode[] }) => ({
      typeCheck(checker: Checker, _macro: unknown, ctx: unknown): CelType {
        const key = checker.check(args[0]!, ctx);
        if (key.type !== 'string' && key.kind !== 'dyn') {
          throw checker.createError('no_matching_overload', `found no matching overload for '${spec.name}(${key.name})'`, ast);
        }
        const map = checker.check(sourceNode(), ctx);
        return spec.kind === 'has' ? checker.boolType : (map.valueType ?? map);
      },
      evaluate(evaluator: Evaluator, _macro: unknown, ctx: unknown): unknown {
        const raw = evaluator.run(args[0]!, ctx);
        if (typeof raw !== 'string') throw new Error(`${spec.name}() needs a string, got ${typeof raw}`);
        const key = spec.lowerCase ? raw.toLowerCase() : raw;
        const value = lookup(evaluator.run(sourceNode(), ctx), key);
        return spec.kind === 'has' ? value !== undefined : (value ?? []);
      },
    }),
    { description: `${spec.name}(name): ${spec.kind === 'has' ? 'whether' : 'the values of'} ${spec.source}[name]${spec.lowerCase ? ' (name in any case)' : ''}.` },
  );
}

function lookup(map: unknown, key: string): unknown {
  if (map instanceof Map) return map.get(key);
  if (map !== null && typeof map === 'object' && Object.hasOwn(map, key)) return (map as Record<string, unknown>)[key];
  return undefined;
}
