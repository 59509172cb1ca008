/**
 * The entry point: a policy document (string) → the normalized policy or its first error.
 *
 * Order of checks, so that the reported error is predictable:
 *   1. size (2221) — before any parsing;
 *   2. YAML/JSON syntax (2236, with the line);
 *   3. top-level keys in document order (2236 unknown / both names, 2230 a phase the endpoint
 *      kind does not run: phases.ts);
 *   4. the shape of every rule and action of every phase (2236);
 *   5. the number of rules of each phase (2264);
 *   6. phase by phase (on_tcp_connect, on_http_request, on_http_response), each rule in order:
 *      actions present (2206), expressions (2200), then each action in order: type (2201/2202),
 *      reachability (2207), config (2203/2204/2217/2224).
 *   7. per phase, the worst-case cost of all its expressions together (2200, cost.ts).
 */
import { POLICY_MAX_BYTES, DEFAULT_MAX_RULES } from './limits.js';
import { parseTree } from './parse.js';
import { CODES, PolicyProblem, fail, utf8Bytes, withSubject } from './problem.js';
import { readPhases, ruleLabel, type RawRule } from './structure.js';
import { validateActions } from './actions.js';
import { checkRuleExpression } from './expressions.js';
import { collectCompiled, compiledKey, type CompiledCel } from './environment.js';
import { checkPolicyCost } from './cost.js';
import { PHASE_ORDER, PHASES, withPhase, type EndpointKind, type PhaseDescriptor, type PhaseName } from './phases.js';
import type { PolicyValidation, ValidatePolicyOptions, ValidatedPolicy, ValidatedRule } from './types.js';

/**
 * The expressions each validated policy compiled while it was checked, by their text: compiling the
 * policy for evaluation (program.ts) takes them from here instead of parsing them again.
 */
const compiledByPolicy = new WeakMap<ValidatedPolicy, ReadonlyMap<string, CompiledCel>>();

/** The CEL compiled during the validation that returned `policy`, if it came from validatePolicy. */
export function compiledDuring(policy: ValidatedPolicy): ReadonlyMap<string, CompiledCel> | undefined {
  return compiledByPolicy.get(policy);
}

export function validatePolicy(source: string, options?: ValidatePolicyOptions): PolicyValidation {
  try {
    const kind = endpointKindOf(options);
    const { result: phases, compiled } = collectCompiled(() => withSubject(options?.subject, () => validate(source, maxRulesOf(options), kind)));
    for (const name of PHASE_ORDER) checkPolicyCost(phases[name], (expression) => compiled.get(compiledKey(PHASES[name], expression)));
    const policy: ValidatedPolicy = { rules: phases.on_tcp_connect, phases };
    compiledByPolicy.set(policy, compiled);
    return { ok: true, policy };
  } catch (error) {
    if (error instanceof PolicyProblem) return { ok: false, error: { code: error.code, message: error.message } };
    // A bug (or an exhausted stack) must not become a 500 or let an unchecked policy through:
    // reject the document without describing internals.
    return {
      ok: false,
      error: {
        code: CODES.malformed,
        message: 'The traffic policy could not be validated. Simplify the document; if it still fails, report it to the operator of this service.',
      },
    };
  }
}

/** A non-negative integer (0 allows only empty policies), or the default for anything else. */
function maxRulesOf(options: ValidatePolicyOptions | undefined): number {
  const value = options?.maxRules;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : DEFAULT_MAX_RULES;
}

/** The endpoint kind asked for; else a TLS edge's module, or a TCP endpoint (only on_tcp_connect) for an unnamed endpoint. */
function endpointKindOf(options: ValidatePolicyOptions | undefined): EndpointKind {
  return options?.endpoint ?? (options?.subject === 'endpoint' ? 'tcp' : 'tls-edge');
}

function validate(source: unknown, maxRules: number, kind: EndpointKind): Record<PhaseName, ValidatedRule[]> {
  if (typeof source !== 'string') fail(CODES.malformed, 'The traffic policy must be a string holding a YAML or JSON document.');
  // Every UTF-16 unit is at least one UTF-8 byte, so a longer string is too large without counting.
  const bytes = source.length > POLICY_MAX_BYTES ? source.length : utf8Bytes(source);
  if (bytes > POLICY_MAX_BYTES) {
    fail(
      CODES.tooLarge,
      `The traffic policy is ${bytes > source.length ? bytes : `at least ${bytes}`} bytes long; it may be at most ${POLICY_MAX_BYTES} bytes (64 KiB).`,
    );
  }

  const raw = readPhases(parseTree(source), kind);
  // Rule counts first, in phase order, before any rule's content: the cheapest check of the largest problem.
  for (const [phase, rules] of raw) {
    if (rules.length > maxRules) {
      fail(
        CODES.tooManyRules,
        `The ${phase.name} phase has ${rules.length} rules, but a policy may have at most ${maxRules}; combine or remove rules.`,
      );
    }
  }
  const result = { on_tcp_connect: [], on_http_request: [], on_http_response: [] } as Record<PhaseName, ValidatedRule[]>;
  for (const name of PHASE_ORDER) {
    const rules = raw.get(PHASES[name]);
    if (rules) result[name] = withPhase(PHASES[name], () => rules.map((rule) => validateRule(rule, PHASES[name], kind)));
  }
  return result;
}

function validateRule(rule: RawRule, phase: PhaseDescriptor, kind: EndpointKind): ValidatedRule {
  const label = ruleLabel(rule.number, rule.name);
  if (!rule.actions || rule.actions.length === 0) {
    fail(CODES.noActions, `${label}, line ${rule.line}: the rule has no actions; give it at least one, for example "actions: [{type: deny}]".`);
  }
  rule.expressions.forEach((expression, index) =>
    checkRuleExpression(`${label}, expression ${index + 1}, line ${expression.line}`, expression.text),
  );
  return {
    name: rule.name,
    expressions: rule.expressions.map((e) => e.text),
    actions: validateActions(rule, rule.actions, phase, kind),
  };
}
