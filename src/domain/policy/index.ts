/** Traffic policy validation (SPEC §7.3) and evaluation (TUNNELS.md §5); see docs/POLICY.md for the user-facing rules. */
export { validatePolicy } from './validate.js';
export { POLICY_MAX_BYTES, DEFAULT_MAX_RULES } from './limits.js';
export { tcpConnectEnvironment } from './environment.js';
export { inCidrRange, inCidrRanges, parseCidr, parseIp, cidrContains } from './cidr.js';
export type { Cidr, IpAddress } from './cidr.js';
export type {
  DenyAction,
  LogAction,
  PolicyError,
  PolicySubject,
  PolicyValidation,
  PolicyValue,
  RestrictIpsAction,
  ValidatedAction,
  ValidatedPolicy,
  ValidatedRule,
  ValidatePolicyOptions,
} from './types.js';

/** Evaluation (TUNNELS.md §5): compile once per policy version, evaluate per connection. */
export { compilePolicy, concatPrograms } from './program.js';
export { OPTIONS_AS_RULES, optionsDocument } from './endpoint-options.js';
export type { PolicyCompilation, PolicyProgram, ProgramRule, ProgramAction } from './program.js';
export { evaluate } from './evaluate.js';
export type { ActionOutcome, DenyOutcome, EvaluationError, LogOutcome, RestrictIpsOutcome, RuleOutcome, TerminateTlsOutcome, Verdict } from './evaluate.js';
export type { PolicyConnection, PolicyEndpoint } from './activation.js';
export { CidrSet } from './cidr.js';
export { PHASES, type EndpointKind, type PhaseDescriptor, type PhaseName } from './phases.js';

/** The HTTP phases (HTTP-POLICY.md): evaluated per request and per answer. */
export { evaluateHttpRequest, evaluateHttpResponse, recordAnswer, settleDecision } from './http-evaluate.js';
export { CircuitBreakers } from './circuit-breakers.js';
export type { HttpAnswer, HttpDecision, HttpPolicyContext, TakenAction } from './http-evaluate.js';
export type { PolicyHttpRequest, PolicyHttpResponse } from './http-activation.js';
export { RateBuckets } from './rate-buckets.js';
export { WEBHOOK_MAX_BODY_BYTES, WEBHOOK_PROVIDERS } from './webhooks.js';
