/**
 * The typed CEL environment of the on_tcp_connect phase (SPEC §7.3), shared by expressions
 * and `${...}` interpolations. Built once, on first use: building it is the expensive part.
 */
import { Environment } from '@marcbachmann/cel-js';
import { inCidrRange, inCidrRanges } from './cidr.js';
import { CEL_LIMITS, MAX_EXPRESSION_BYTES } from './limits.js';
import { quoted, subjectNoun, utf8Bytes } from './problem.js';
import { INVALID_REGEX_CODE, registerRe2Matches } from './regex.js';
import { unknownHasField } from './has-check.js';
import { budgeted } from './cost.js';

// cel-js names a timestamp field by its protobuf name; a bare 'timestamp' here would be an unknown message type.
const TIMESTAMP = 'google.protobuf.Timestamp';

/**
 * Variables of the phase, as (nested) object schemas: `conn.geo.country_code` type-checks as string.
 * The evaluator builds its activation from the same table (see activation.ts), and a test walks
 * both, so a name that validates always has a value at run time.
 */
export const VARIABLES = {
  conn: {
    client_ip: 'string',
    client_port: 'int',
    server_ip: 'string',
    server_port: 'int',
    server_region: 'string',
    ts: { start: TIMESTAMP },
    geo: {
      city: 'string',
      country: 'string',
      country_code: 'string',
      latitude: 'string',
      longitude: 'string',
      radius: 'string',
      subdivision: 'string',
    },
  },
  endpoint: { addr: 'string', host: 'string', id: 'string', url: 'string', protocol: 'string', port: 'int' },
  time: { now: 'string' },
  actions: {
    ngrok: {
      log: { metadata: 'map<string, dyn>' },
      restrict_ips: { action: 'string', matched_cidr: 'string', error: { code: 'string', message: 'string' } },
    },
  },
} as const;

let environment: Environment | undefined;
let knownFunctions: ReadonlySet<string> | undefined;

/** The on_tcp_connect environment; it can check expressions and also evaluate them. */
export function tcpConnectEnvironment(): Environment {
  if (!environment) {
    const env = new Environment({ limits: { ...CEL_LIMITS } });
    for (const [name, schema] of Object.entries(VARIABLES)) env.registerVariable({ name, schema });
    env.registerFunction('inCidrRange(string, string): bool', inCidrRange, {
      description: 'Whether the IP address lies in the CIDR range; false for an invalid address or CIDR.',
    });
    env.registerFunction('inCidrRanges(string, list<string>): bool', inCidrRanges, {
      description: 'Whether the IP address lies in any of the CIDR ranges; invalid CIDRs never match.',
    });
    // matches() with RE2 semantics in linear time, replacing cel-js's backtracking RegExp.
    registerRe2Matches(env);
    knownFunctions = new Set(env.getDefinitions().functions.map((f) => f.name));
    environment = env;
  }
  return environment;
}

/** A parsed and type-checked expression; calling it with an activation evaluates it. */
export type CompiledCel = (activation: Record<string, unknown>) => unknown;

export type CelCheck = { ok: true; type: string; compiled: CompiledCel } | { ok: false; reason: string };

/**
 * While a validation runs, every expression that checks is recorded here by its text, so that
 * compiling the validated policy does not parse anything again (see collectCompiled).
 */
let collector: Map<string, CompiledCel> | undefined;

/** Runs `work` (synchronously) and returns what it returned plus every expression it checked. */
export function collectCompiled<T>(work: () => T): { result: T; compiled: Map<string, CompiledCel> } {
  const outer = collector;
  const compiled = new Map<string, CompiledCel>();
  collector = compiled;
  try {
    return { result: work(), compiled };
  } finally {
    collector = outer;
  }
}

/** Names that exist only in HTTP phases: pointing this out saves the user a search. */
const HTTP_ONLY_VARIABLES = new Set(['req', 'res']);

/**
 * Parses and type-checks one expression. `reason` completes the sentence "The expression … is
 * not valid: <reason>" and quotes at most a few dozen characters of the input.
 */
export function checkCel(expression: string): CelCheck {
  if (utf8Bytes(expression) > MAX_EXPRESSION_BYTES) {
    return { ok: false, reason: `it is longer than ${MAX_EXPRESSION_BYTES} bytes.` };
  }
  if (expression.trim() === '') return { ok: false, reason: 'it is empty.' };
  const env = tcpConnectEnvironment();
  let result: ReturnType<Environment['check']>;
  let ast: unknown;
  let parsed: ReturnType<Environment['parse']> | undefined;
  try {
    parsed = env.parse(expression);
    ast = parsed.ast;
    result = parsed.check();
  } catch (error) {
    // A syntax error is thrown by parse() where check() would have returned it.
    if (isCelError(error)) result = { valid: false, error: error as NonNullable<ReturnType<Environment['check']>['error']> };
    // The limits keep the checker's recursion shallow; this is the backstop if one still overflows.
    else return { ok: false, reason: 'it is too complex to check; split it into several expressions.' };
  }
  if (result.valid && parsed) {
    const mismatch = mapKeyMismatch(ast) ?? unknownHasField(ast, VARIABLES);
    if (mismatch) return { ok: false, reason: mismatch };
    const budget = budgeted(ast, parsed as CompiledCel);
    if (!budget.ok) return budget;
    collector?.set(expression, budget.compiled);
    return { ok: true, type: result.type ?? 'dyn', compiled: budget.compiled };
  }
  const error = result.error as { code?: string; summary?: string } | undefined;
  return { ok: false, reason: explain(error?.code, error?.summary ?? 'it could not be compiled') };
}

function isCelError(error: unknown): boolean {
  return error instanceof Error && !(error instanceof RangeError) && 'code' in error;
}

interface CheckedNode {
  op: string;
  args: unknown;
  checkedType?: { name: string; kind: string; keyType?: { name: string } };
}

/**
 * cel-js checks the index type of lists and objects but not of maps: `metadata[1]` on a
 * map(string, dyn) passes its checker, where standard CEL has no overload for it. Walks the
 * checked tree for such an index and describes the first one found.
 */
function mapKeyMismatch(node: unknown): string | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = mapKeyMismatch(child);
      if (found) return found;
    }
    return undefined;
  }
  if (node === null || typeof node !== 'object' || !('op' in node)) return undefined;
  const { op, args } = node as CheckedNode;
  if ((op === '[]' || op === '[?]') && Array.isArray(args)) {
    const keyType = (args[0] as CheckedNode | undefined)?.checkedType?.keyType?.name;
    const indexType = (args[1] as CheckedNode | undefined)?.checkedType?.name;
    if (keyType && indexType && keyType !== 'dyn' && indexType !== 'dyn' && keyType !== indexType) {
      return `a map with keys of type ${keyType} is indexed with a value of type ${describeCelType(indexType)}.`;
    }
  }
  return mapKeyMismatch(args);
}

function explain(code: string | undefined, summary: string): string {
  const clipped = summary.replace(/\s+/g, ' ').slice(0, 120);
  if (code === 'unknown_variable') {
    const name = /Unknown variable: (\S+)/.exec(summary)?.[1] ?? '';
    const hint = HTTP_ONLY_VARIABLES.has(name)
      ? ` ${quoted(name)} exists only in HTTP phases, which ${subjectNoun()} does not have.`
      : ' The on_tcp_connect phase has the variables conn, endpoint, time and actions.';
    return `it uses the unknown variable ${quoted(name)}.${hint}`;
  }
  if (code === 'no_matching_overload') {
    const called = /for '(?:[\w.<>, ]+\.)?([A-Za-z_]\w*)\(/.exec(summary)?.[1];
    if (called && knownFunctions && !knownFunctions.has(called)) {
      return `it calls the unknown function ${quoted(called)}; the on_tcp_connect phase offers standard CEL functions plus inCidrRange and inCidrRanges.`;
    }
    return `a function is called with arguments of the wrong types (${clipped}).`;
  }
  if (code === 'no_such_key') {
    const field = /No such key: (\S+)/.exec(summary)?.[1] ?? '';
    return `it reads the field ${quoted(field)}, which does not exist in the on_tcp_connect phase.`;
  }
  // regex.ts words this one completely (and quotes the pattern briefly).
  if (code === INVALID_REGEX_CODE) return summary;
  if (code === 'limit_exceeded') return `it is too large or too deeply nested (${clipped}).`;
  return `${clipped.charAt(0).toLowerCase()}${clipped.slice(1)}${/[.!?]$/.test(clipped) ? '' : '.'}`;
}

/** A CEL type name as a user would read it ("$conn.geo" is how cel-js names the object conn.geo). */
export function describeCelType(type: string): string {
  if (type.startsWith('$')) return `${type.slice(1)} (an object)`;
  return type === TIMESTAMP ? 'timestamp' : type;
}
