/** Traffic policy validation for TLS edges (SPEC §7.3); see docs/POLICY.md for the user-facing rules. */
export { validatePolicy } from './validate.js';
export { POLICY_MAX_BYTES, DEFAULT_MAX_RULES } from './limits.js';
export { tcpConnectEnvironment } from './environment.js';
export { inCidrRange, inCidrRanges, parseCidr, parseIp, cidrContains } from './cidr.js';
export type { Cidr, IpAddress } from './cidr.js';
export type {
  DenyAction,
  LogAction,
  PolicyError,
  PolicyValidation,
  PolicyValue,
  RestrictIpsAction,
  ValidatedAction,
  ValidatedPolicy,
  ValidatedRule,
  ValidatePolicyOptions,
} from './types.js';
