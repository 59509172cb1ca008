import type { TerminateTlsAction } from './terminate-tls.js';
/**
 * Runs a compiled policy on one connection (TUNNELS.md §5): rules in order; a rule whose
 * expressions are all true runs its actions in order; `deny`, or `restrict-ips` deciding "deny"
 * with enforce, closes the connection and stops evaluation. An expression that fails at run time
 * counts as false and is reported. Pure: no I/O, and the time comes in with the connection.
 */
import { fillActivation, newActivation, NO_VARS, TypedActivation, type PolicyConnection } from './activation.js';
import { cidrContains, parseCidr, type IpAddress } from './cidr.js';
import type { CidrList, PolicyProgram, ProgramAction, ProgramRule, ValueTemplate } from './program.js';
import type { PolicyValue } from './types.js';

export type ActionOutcome = DenyOutcome | RestrictIpsOutcome | LogOutcome | TerminateTlsOutcome | SetVarsOutcome;

/** set-vars: the variables it set, as `vars.*` reads them in the rules after it. */
export interface SetVarsOutcome {
  type: 'set-vars';
  vars: { [name: string]: PolicyValue };
  error?: string;
}

/** burrow terminates TLS with these settings (the last terminate-tls taken wins). */
export interface TerminateTlsOutcome {
  type: 'terminate-tls';
  config: TerminateTlsAction['config'];
  error?: undefined;
}

/** deny and close-connection: the connection is closed. */
export interface DenyOutcome {
  type: 'deny' | 'close-connection';
}

export interface RestrictIpsOutcome {
  type: 'restrict-ips';
  /** The decision: `deny` when the client is in a deny CIDR, or an allow list exists and holds it not. */
  action: 'allow' | 'deny';
  /** The most specific CIDR that decided (as written), or "" when none did (not in the allow list / in no list). */
  matched_cidr: string;
  /** The action's `enforce`: whether a `deny` decision closes the connection. */
  enforced: boolean;
  /** A run-time problem (an interpolated entry that is not a CIDR, an unreadable client address). */
  error?: string;
}

export interface LogOutcome {
  type: 'log';
  /** The metadata with every `${...}` replaced by its value as text ("" when it failed: see `error`). */
  metadata: { [key: string]: PolicyValue };
  error?: string;
}

export interface RuleOutcome {
  /** 1-based position in the phase. */
  rule: number;
  name: string | null;
  /** Whether every expression was true (and so the actions ran). */
  matched: boolean;
  /** The run-time error that made an expression count as false. */
  error?: string;
  /** What each action did, in order; empty when the rule did not match. */
  actions: ActionOutcome[];
}

export interface EvaluationError {
  rule: number;
  name: string | null;
  /** Where in the rule: `expression 2`, `action 1 (log)`, `action 3 (restrict-ips)`. */
  at: string;
  message: string;
}

export interface Verdict {
  allowed: boolean;
  /** The rules evaluated, in order; rules after the one that closed the connection are absent. */
  rules: RuleOutcome[];
  /** The action that closed the connection, when one did. */
  closedBy?: { rule: number; name: string | null; action: number; type: 'deny' | 'close-connection' | 'restrict-ips' };
  /** Every run-time error, in order (also attached to their rule or action). */
  errors: EvaluationError[];
}

/** What one evaluation works on: the variables, as written and as cel-js reads them. */
interface State {
  typed: TypedActivation;
  client: IpAddress | null;
  busy: boolean;
}

function newState(): State {
  return { typed: new TypedActivation(newActivation()), client: null, busy: false };
}

/** One state per program, reused: evaluation is synchronous, so no two calls overlap. */
const states = new WeakMap<PolicyProgram, State>();

export function evaluate(program: PolicyProgram, connection: PolicyConnection): Verdict {
  if (program.rules.length === 0) return { allowed: true, rules: [], errors: [] };
  let state = states.get(program);
  if (!state) states.set(program, (state = newState()));
  // Only a re-entrant call (none exists today) would find it busy; it gets its own.
  if (state.busy) state = newState();
  state.busy = true;
  try {
    state.client = fillActivation(state.typed.raw, connection);
    state.typed.reset();
    return run(program, state);
  } finally {
    state.busy = false;
  }
}

/** cel-js reads variables as properties; TypedActivation's getters provide them. */
function activationOf(state: State): Record<string, unknown> {
  return state.typed as unknown as Record<string, unknown>;
}

function report(verdict: Verdict, rule: { number: number; name: string | null }, at: string, message: string): void {
  verdict.errors.push({ rule: rule.number, name: rule.name, at, message });
}

function run(program: PolicyProgram, state: State): Verdict {
  const verdict: Verdict = { allowed: true, rules: [], errors: [] };
  const typed = activationOf(state);
  for (const rule of program.rules) {
    const outcome: RuleOutcome = { rule: rule.number, name: rule.name, matched: true, actions: [] };
    verdict.rules.push(outcome);

    const failure = ruleMismatch(rule, typed);
    if (failure !== undefined) {
      outcome.matched = false;
      if (failure !== null) {
        outcome.error = `${failure.at} (${failure.message})`;
        report(verdict, rule, failure.at, failure.message);
      }
    }
    if (!outcome.matched) continue;

    for (let a = 0; a < rule.actions.length; a++) {
      const action = rule.actions[a]!;
      const result = runAction(action, state);
      outcome.actions.push(result);
      if ('error' in result && result.error !== undefined) report(verdict, rule, `action ${a + 1} (${action.type})`, result.error);
      const closes = result.type === 'deny' || result.type === 'close-connection' || (result.type === 'restrict-ips' && result.action === 'deny' && result.enforced);
      if (closes) {
        verdict.allowed = false;
        verdict.closedBy = { rule: rule.number, name: rule.name, action: a + 1, type: result.type };
        return verdict;
      }
    }
  }
  return verdict;
}

function runAction(action: ProgramAction, state: State): ActionOutcome {
  switch (action.type) {
    case 'deny':
    case 'close-connection':
      return { type: action.type };
    case 'log': {
      const errors: string[] = [];
      const metadata = action.fixed ? staticMetadata(action.metadata) : buildMap(action.metadata, activationOf(state), errors);
      state.typed.raw.actions.ngrok.log.metadata = metadata;
      state.typed.actionsChanged();
      const outcome: LogOutcome = { type: 'log', metadata };
      if (errors.length > 0) outcome.error = errors.join('; ');
      return outcome;
    }
    case 'restrict-ips':
      return restrictIps(action, state);
    case 'terminate-tls':
      return { type: 'terminate-tls', config: action.config };
    case 'set-vars':
      return setVars(action, state);
    default:
      throw new Error(`internal: ${action.type} is not an on_tcp_connect action`);
  }
}

function setVars(action: Extract<ProgramAction, { type: 'set-vars' }>, state: State): SetVarsOutcome {
  const raw = state.typed.raw;
  if (raw.vars === NO_VARS) raw.vars = new Map();
  const errors: string[] = [];
  const vars: { [name: string]: PolicyValue } = {};
  for (const [name, template] of action.vars) {
    const value = build(template as ValueTemplate, activationOf(state), errors);
    // A whole-number literal reads as a CEL int, as in the HTTP phases.
    raw.vars.set(name, typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value);
    Object.defineProperty(vars, name, { value, enumerable: true, writable: true, configurable: true });
  }
  const outcome: SetVarsOutcome = { type: 'set-vars', vars };
  if (errors.length > 0) outcome.error = errors.join('; ');
  return outcome;
}

function restrictIps(action: Extract<ProgramAction, { type: 'restrict-ips' }>, state: State): RestrictIpsOutcome {
  const { decision, matched, errors } = restrictDecision(action, state.client, state.typed.raw.conn.client_ip, activationOf(state));
  const variables = state.typed.raw.actions.ngrok.restrict_ips;
  variables.action = decision;
  variables.matched_cidr = matched;
  variables.error.code = errors.length > 0 ? 'ERR_NGROK_2217' : '';
  variables.error.message = errors.join('; ');
  state.typed.actionsChanged();
  const outcome: RestrictIpsOutcome = { type: 'restrict-ips', action: decision, matched_cidr: matched, enforced: action.enforce };
  if (errors.length > 0) outcome.error = errors.join('; ');
  return outcome;
}

/**
 * Why a rule does not apply: undefined when every expression is true, null when one is false, or
 * the run-time error that made one count as false (`at`: `expression 2`).
 */
export function ruleMismatch(rule: ProgramRule, activation: Record<string, unknown>): { at: string; message: string } | null | undefined {
  for (let i = 0; i < rule.expressions.length; i++) {
    const expression = rule.expressions[i]!;
    let value: unknown;
    try {
      value = expression.run(activation);
    } catch (error) {
      return { at: `expression ${i + 1}`, message: `${clip(expression.text)}: ${messageOf(error)}` };
    }
    if (value !== true) {
      return typeof value === 'boolean' ? null : { at: `expression ${i + 1}`, message: `${clip(expression.text)}: produced ${celTypeOf(value)}, not a bool` };
    }
  }
  return undefined;
}

/** restrict-ips's decision for one client (shared by every phase that runs it). */
export function restrictDecision(
  action: Extract<ProgramAction, { type: 'restrict-ips' }>,
  client: IpAddress | null,
  clientText: string,
  activation: Record<string, unknown>,
): { decision: 'allow' | 'deny'; matched: string; errors: string[] } {
  const errors: string[] = [];
  if (!client) {
    // The data plane always has the peer's address; failing closed is the only safe answer.
    errors.push(`the client address ${clip(clientText)} is not an IP address`);
    return { decision: 'deny', matched: '', errors };
  }
  const denied = lookup(action.deny, client, activation, errors);
  if (denied !== undefined) return { decision: 'deny', matched: denied, errors };
  if (!action.allow.given) return { decision: 'allow', matched: '', errors };
  const allowed = lookup(action.allow, client, activation, errors);
  return { decision: allowed === undefined ? 'deny' : 'allow', matched: allowed ?? '', errors };
}

/** The matching CIDR of a list: the most specific fixed one, else the first interpolated one holding the address. */
function lookup(list: CidrList, client: IpAddress, activation: Record<string, unknown>, errors: string[]): string | undefined {
  if (!list.given) return undefined;
  const found = list.fixed.lookup(client);
  if (found !== undefined || list.dynamic.length === 0) return found;
  for (const expression of list.dynamic) {
    let value: unknown;
    try {
      value = expression.run(activation);
    } catch (error) {
      errors.push(`\${${clip(expression.text)}}: ${messageOf(error)}`);
      continue;
    }
    for (const text of Array.isArray(value) ? value : [value]) {
      const cidr = typeof text === 'string' ? parseCidr(text) : null;
      if (!cidr) {
        errors.push(`\${${clip(expression.text)}} produced ${typeof text === 'string' ? JSON.stringify(text) : celTypeOf(text)}, which is not a CIDR`);
        continue;
      }
      // cidrContains reads IPv4-mapped addresses as CidrSet does.
      if (cidrContains(cidr, client)) return text as string;
    }
  }
  return undefined;
}

const staticCache = new WeakMap<Array<[string, ValueTemplate]>, { [key: string]: PolicyValue }>();

/** Metadata without interpolations: built once per program and shared (it is frozen). */
export function staticMetadata(entries: Array<[string, ValueTemplate]>): { [key: string]: PolicyValue } {
  let value = staticCache.get(entries);
  if (!value) {
    value = Object.freeze(buildMap(entries, undefined, [])) as { [key: string]: PolicyValue };
    staticCache.set(entries, value);
  }
  return value;
}

export function buildMap(entries: Array<[string, ValueTemplate]>, activation: Record<string, unknown> | undefined, errors: string[]): { [key: string]: PolicyValue } {
  const out: { [key: string]: PolicyValue } = {};
  for (const [key, template] of entries) {
    const value = build(template, activation, errors);
    if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
  return out;
}

export function build(template: ValueTemplate, activation: Record<string, unknown> | undefined, errors: string[]): PolicyValue {
  switch (template.kind) {
    case 'static':
      return template.value;
    case 'list':
      return template.items.map((item) => build(item, activation, errors));
    case 'map':
      return buildMap(template.entries, activation, errors);
    case 'string': {
      let text = template.literals[0]!;
      for (let i = 0; i < template.expressions.length; i++) {
        const expression = template.expressions[i]!;
        try {
          text += celToString(expression.run(activation!));
        } catch (error) {
          errors.push(`\${${clip(expression.text)}}: ${messageOf(error)}`);
        }
        text += template.literals[i + 1]!;
      }
      return text;
    }
  }
}

/** A CEL value as interpolated text: strings as they are, numbers in decimal, timestamps in RFC 3339, lists and maps as JSON. */
export function celToString(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'bigint':
    case 'number':
    case 'boolean':
      return String(value);
    default:
      if (value === null || value === undefined) return 'null';
      if (value instanceof Date) return value.toISOString();
      if (value instanceof Uint8Array) return new TextDecoder().decode(value);
      if (Array.isArray(value) || value instanceof Set || value instanceof Map || isPlainObject(value)) {
        return JSON.stringify(toJson(value));
      }
      return String(value);
  }
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function toJson(value: unknown): unknown {
  // An int as a JSON number while it stays exact, as text beyond 2^53.
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value) || value instanceof Set) return [...value].map(toJson);
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), toJson(v)]));
  if (value !== null && typeof value === 'object') {
    if (!isPlainObject(value)) return String(value);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJson(v)]));
  }
  return value;
}

function celTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'an int';
  if (typeof value === 'number') return 'a double';
  if (typeof value === 'string') return 'a string';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return 'a timestamp';
  return typeof value === 'object' ? 'a map' : typeof value;
}

/** A cel-js error's one-line summary (its message adds a multi-line source excerpt). */
export function messageOf(error: unknown): string {
  if (error && typeof error === 'object') {
    const summary = (error as { summary?: unknown }).summary;
    if (typeof summary === 'string') return summary;
    if (error instanceof RangeError) return 'the expression is too complex to evaluate';
    if (error instanceof Error) return error.message.split('\n')[0]!;
  }
  return String(error);
}

export function clip(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}
