/**
 * The typed CEL environment of each phase (SPEC §7.3, HTTP-POLICY.md §1), shared by expressions
 * and `${...}` interpolations. Built once, on first use: building it is the expensive part.
 */
import { Environment } from '@marcbachmann/cel-js';
import { inCidrRange, inCidrRanges } from './cidr.js';
import { CEL_LIMITS, MAX_EXPRESSION_BYTES } from './limits.js';
import { quoted, subjectNoun, utf8Bytes } from './problem.js';
import { INVALID_REGEX_CODE, registerRe2Matches } from './regex.js';
import { unknownHasField } from './has-check.js';
import { budgeted } from './cost.js';
import { currentPhase, PHASES, type PhaseDescriptor, type PhaseName } from './phases.js';
import { TCP_VARIABLES, TIMESTAMP } from './variables.js';
import { registerHttpMacros } from './macros.js';

/** The on_tcp_connect variables (kept under this name for the tests that walk it). */
export const VARIABLES = TCP_VARIABLES;

const environments = new Map<PhaseName, Environment>();
const knownFunctions = new Map<PhaseName, ReadonlySet<string>>();

/** The on_tcp_connect environment; it can check expressions and also evaluate them. */
export function tcpConnectEnvironment(): Environment {
  return phaseEnvironment(PHASES.on_tcp_connect);
}

/** A phase's environment, built once on first use (building it is the expensive part). */
export function phaseEnvironment(phase: PhaseDescriptor): Environment {
  let env = environments.get(phase.name);
  if (!env) {
    env = new Environment({ limits: { ...CEL_LIMITS } });
    for (const [name, schema] of Object.entries(phase.variables)) {
      if (typeof schema === 'string') env.registerVariable(name, schema as never);
      else env.registerVariable({ name, schema: schema as never });
    }
    env.registerFunction('inCidrRange(string, string): bool', inCidrRange, {
      description: 'Whether the IP address lies in the CIDR range; false for an invalid address or CIDR.',
    });
    env.registerFunction('inCidrRanges(string, list<string>): bool', inCidrRanges, {
      description: 'Whether the IP address lies in any of the CIDR ranges; invalid CIDRs never match.',
    });
    // matches() with RE2 semantics in linear time, replacing cel-js's backtracking RegExp.
    registerRe2Matches(env);
    if (phase.name !== 'on_tcp_connect') registerHttpMacros(env, phase.name === 'on_http_response');
    knownFunctions.set(phase.name, new Set(env.getDefinitions().functions.map((f) => f.name)));
    environments.set(phase.name, env);
  }
  return env;
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
const HTTP_ONLY_VARIABLES = new Set(['req', 'res', 'vars']);

/**
 * Parses and type-checks one expression. `reason` completes the sentence "The expression … is
 * not valid: <reason>" and quotes at most a few dozen characters of the input.
 */
export function checkCel(expression: string, phase: PhaseDescriptor = currentPhase()): CelCheck {
  if (utf8Bytes(expression) > MAX_EXPRESSION_BYTES) {
    return { ok: false, reason: `it is longer than ${MAX_EXPRESSION_BYTES} bytes.` };
  }
  if (expression.trim() === '') return { ok: false, reason: 'it is empty.' };
  const env = phaseEnvironment(phase);
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
    const mismatch = mapKeyMismatch(ast) ?? unknownHasField(ast, phase.variables);
    if (mismatch) return { ok: false, reason: mismatch };
    const budget = budgeted(ast, parsed as CompiledCel);
    if (!budget.ok) return budget;
    collector?.set(compiledKey(phase, expression), budget.compiled);
    return { ok: true, type: result.type ?? 'dyn', compiled: budget.compiled };
  }
  const error = result.error as { code?: string; summary?: string } | undefined;
  return { ok: false, reason: explain(phase, error?.code, error?.summary ?? 'it could not be compiled') };
}

/** How a validation's compiled expressions are keyed: the same text means different things in different phases. */
export function compiledKey(phase: PhaseDescriptor, expression: string): string {
  return `${phase.name}\n${expression}`;
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

function explain(phase: PhaseDescriptor, code: string | undefined, summary: string): string {
  const clipped = summary.replace(/\s+/g, ' ').slice(0, 120);
  if (code === 'unknown_variable') {
    const name = /Unknown variable: (\S+)/.exec(summary)?.[1] ?? '';
    const hint = HTTP_ONLY_VARIABLES.has(name) && phase.name === 'on_tcp_connect'
      ? ` ${quoted(name)} exists only in HTTP phases, which ${subjectNoun()} does not have.`
      : ` The ${phase.name} phase has the variables ${Object.keys(phase.variables).join(', ')}.`;
    return `it uses the unknown variable ${quoted(name)}.${hint}`;
  }
  if (code === 'no_matching_overload') {
    const called = /for '(?:[\w.<>, ]+\.)?([A-Za-z_]\w*)\(/.exec(summary)?.[1];
    const known = knownFunctions.get(phase.name);
    if (called && known && !known.has(called)) {
      return `it calls the unknown function ${quoted(called)}; the ${phase.name} phase offers standard CEL functions plus ${phase.name === 'on_tcp_connect' ? 'inCidrRange and inCidrRanges' : 'the macros listed in docs/POLICY.md'}.`;
    }
    return `a function is called with arguments of the wrong types (${clipped}).`;
  }
  if (code === 'no_such_key') {
    const field = /No such key: (\S+)/.exec(summary)?.[1] ?? '';
    return `it reads the field ${quoted(field)}, which does not exist in the ${phase.name} phase.`;
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
