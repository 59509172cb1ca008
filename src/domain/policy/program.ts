import type { TerminateTlsAction } from './terminate-tls.js';
/**
 * A validated policy compiled for evaluation, once per policy version: CEL expressions parsed and
 * type-checked (taken from the validation that just ran when there was one), CIDR lists turned
 * into CidrSets, `${...}` templates split into literal text and compiled expressions.
 */
import { CidrSet, parseCidr } from './cidr.js';
import { checkCel, compiledKey, type CompiledCel } from './environment.js';
import { PHASE_ORDER, PHASES, type PhaseDescriptor, type PhaseName } from './phases.js';
import { compileHttpAction, type HttpProgramAction, type StringTemplate } from './http-program.js';
import { scanInterpolations } from './interpolation.js';
import { compiledDuring, validatePolicy } from './validate.js';
import type { PolicyError, PolicyValue, ValidatePolicyOptions, ValidatedAction, ValidatedPolicy } from './types.js';

export interface CompiledExpression {
  /** The CEL text, as written. */
  text: string;
  run: CompiledCel;
}

/** A `log` metadata value: fixed, or rebuilt per connection because it holds interpolations. */
export type ValueTemplate =
  | { kind: 'static'; value: PolicyValue }
  /** `literals` has one more entry than `expressions`: literal, expr, literal, …, literal. */
  | { kind: 'string'; literals: string[]; expressions: CompiledExpression[] }
  | { kind: 'list'; items: ValueTemplate[] }
  | { kind: 'map'; entries: Array<[string, ValueTemplate]> };

export interface CidrList {
  /** Whether the list has any entry (fixed or interpolated). */
  given: boolean;
  fixed: CidrSet;
  /** Entries that are a whole `${...}`, evaluated per connection. */
  dynamic: CompiledExpression[];
}

export type ProgramAction =
  | { type: 'deny'; status?: number }
  | { type: 'close-connection' }
  | { type: 'log'; metadata: Array<[string, ValueTemplate]>; fixed: boolean }
  | { type: 'restrict-ips'; allow: CidrList; deny: CidrList; enforce: boolean }
  | TerminateTlsAction
  | Exclude<HttpProgramAction, { type: 'deny' }>;

export interface ProgramRule {
  /** 1-based position in the phase. */
  number: number;
  name: string | null;
  expressions: CompiledExpression[];
  actions: ProgramAction[];
}

/** A compiled policy; immutable and safe to share between connections. */
export interface PolicyProgram {
  /** The on_tcp_connect rules (`phases.on_tcp_connect`). */
  readonly rules: readonly ProgramRule[];
  readonly phases: { readonly [P in PhaseName]: readonly ProgramRule[] };
  /** The validated policy it was compiled from. */
  readonly policy: ValidatedPolicy;
}

export type PolicyCompilation = { ok: true; program: PolicyProgram } | { ok: false; error: PolicyError };

/**
 * Compiles a policy for evaluation.
 * - From document text (YAML or JSON): validates it exactly as the API does (same codes and
 *   messages) and compiles it; `{ok: false, error}` for an invalid document.
 * - From the `policy` of a successful validatePolicy: compiles it without parsing its CEL again.
 *   A ValidatedPolicy built by other means is compiled from its text; it throws if it is not valid.
 */
export function compilePolicy(source: string, options?: ValidatePolicyOptions): PolicyCompilation;
export function compilePolicy(policy: ValidatedPolicy): PolicyProgram;
export function compilePolicy(input: string | ValidatedPolicy, options?: ValidatePolicyOptions): PolicyCompilation | PolicyProgram {
  if (typeof input !== 'string') return compileValidated(input);
  const validation = validatePolicy(input, options);
  if (!validation.ok) return validation;
  return { ok: true, program: compileValidated(validation.policy) };
}

function compileValidated(policy: ValidatedPolicy): PolicyProgram {
  const known = compiledDuring(policy);
  const compilePhase = (phase: PhaseDescriptor): readonly ProgramRule[] => {
    const compile = (text: string): CompiledExpression => {
      const found = known?.get(compiledKey(phase, text));
      if (found) return { text, run: found };
      const check = checkCel(text, phase);
      if (!check.ok) throw new Error(`The policy was not validated: the expression ${JSON.stringify(text)} is not valid: ${check.reason}`);
      return { text, run: check.compiled };
    };
    const rules = (policy.phases?.[phase.name] ?? (phase.name === 'on_tcp_connect' ? policy.rules : [])).map(
      (rule, index): ProgramRule => ({
        number: index + 1,
        name: rule.name,
        expressions: rule.expressions.map(compile),
        actions: rule.actions.map((action, a) => compileAction(action, compile, `${phase.name} rule ${index + 1} action ${a + 1}`)),
      }),
    );
    return Object.freeze(rules);
  };
  const phases = Object.fromEntries(PHASE_ORDER.map((name) => [name, compilePhase(PHASES[name])])) as Record<PhaseName, readonly ProgramRule[]>;
  return Object.freeze({ rules: phases.on_tcp_connect, phases: Object.freeze(phases), policy });
}

type Compile = (text: string) => CompiledExpression;

function compileAction(action: ValidatedAction, compile: Compile, id: string): ProgramAction {
  switch (action.type) {
    case 'deny':
      return action.config === null ? { type: 'deny' } : { type: 'deny', status: action.config.status_code };
    case 'close-connection':
      return { type: 'close-connection' };
    case 'log': {
      const metadata = Object.entries(action.config.metadata).map(([key, value]): [string, ValueTemplate] => [key, template(value, compile)]);
      return { type: 'log', metadata, fixed: metadata.every(([, t]) => t.kind === 'static') };
    }
    case 'restrict-ips':
      return {
        type: 'restrict-ips',
        allow: cidrList(action.config.allow, compile),
        deny: cidrList(action.config.deny, compile),
        enforce: action.config.enforce,
      };
    case 'terminate-tls':
      return action;
    default:
      return compileHttpAction(action, (value) => template(value, compile) as StringTemplate, id) as ProgramAction;
  }
}

function cidrList(entries: string[], compile: Compile): CidrList {
  const fixed: Array<{ cidr: NonNullable<ReturnType<typeof parseCidr>>; text: string }> = [];
  const dynamic: CompiledExpression[] = [];
  for (const text of entries) {
    const cidr = parseCidr(text);
    if (cidr) {
      fixed.push({ cidr, text });
      continue;
    }
    // Validation allows only a CIDR or one whole interpolation.
    const scan = scanInterpolations(text);
    const part = scan.ok && scan.parts.length === 1 ? scan.parts[0]! : undefined;
    if (!part || part.start !== 0 || part.end !== text.length) throw new Error(`The policy was not validated: ${JSON.stringify(text)} is not a CIDR.`);
    dynamic.push(compile(part.expression));
  }
  return { given: entries.length > 0, fixed: CidrSet.build(fixed), dynamic };
}

function template(value: PolicyValue, compile: Compile): ValueTemplate {
  if (typeof value === 'string') {
    if (!value.includes('${')) return { kind: 'static', value };
    const scan = scanInterpolations(value);
    if (!scan.ok) throw new Error(`The policy was not validated: ${JSON.stringify(value)} has an unclosed interpolation.`);
    const literals: string[] = [];
    let from = 0;
    for (const part of scan.parts) {
      literals.push(value.slice(from, part.start));
      from = part.end;
    }
    literals.push(value.slice(from));
    return { kind: 'string', literals, expressions: scan.parts.map((p) => compile(p.expression)) };
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => template(item, compile));
    return items.every((t) => t.kind === 'static') ? { kind: 'static', value: frozenCopy(value) } : { kind: 'list', items };
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([key, item]): [string, ValueTemplate] => [key, template(item, compile)]);
    return entries.every(([, t]) => t.kind === 'static') ? { kind: 'static', value: frozenCopy(value) } : { kind: 'map', entries };
  }
  return { kind: 'static', value };
}

/** Static metadata is shared by every verdict: a frozen copy keeps one consumer from changing another's. */
function frozenCopy(value: PolicyValue): PolicyValue {
  if (Array.isArray(value)) return Object.freeze(value.map(frozenCopy)) as PolicyValue;
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: PolicyValue } = {};
    for (const [key, item] of Object.entries(value)) {
      // defineProperty: a key such as "__proto__" stays data.
      Object.defineProperty(out, key, { value: frozenCopy(item), enumerable: true, writable: true, configurable: true });
    }
    return Object.freeze(out);
  }
  return value;
}

/** `first`'s rules, then `second`'s, phase by phase (the agents' options before their policy). */
export function concatPrograms(first: PolicyProgram, second: PolicyProgram): PolicyProgram {
  const phases = Object.fromEntries(PHASE_ORDER.map((name) => [name, Object.freeze([...first.phases[name], ...second.phases[name]])])) as Record<PhaseName, readonly ProgramRule[]>;
  return Object.freeze({ rules: phases.on_tcp_connect, phases: Object.freeze(phases), policy: second.policy });
}
