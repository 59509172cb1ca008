import type { TerminateTlsAction } from './terminate-tls.js';
import type { JwtValidationConfig } from '../identity/jwt-config.js';
/**
 * Public shapes of the traffic policy validator (SPEC §7.3). The validator turns a policy
 * document (a string) into either a normalized policy or the first error found in it.
 */
import type { EndpointKind, PhaseName } from './phases.js';
import type { LoginConfig } from '../identity/login-config.js';

/** The first problem found in a policy document; `code` is one of the ERR_NGROK_22xx codes. */
export interface PolicyError {
  code: string;
  message: string;
}

/** Any value a YAML/JSON document can hold after validation (used for `log` metadata). */
export type PolicyValue = string | number | boolean | null | PolicyValue[] | { [key: string]: PolicyValue };

export interface DenyAction {
  type: 'deny';
  /** No configuration in on_tcp_connect; in HTTP phases the answer's status (default 403). */
  config: null | { status_code: number };
}

export interface LogAction {
  type: 'log';
  config: {
    /** Values as written; strings may still contain `${expr}` interpolations (already compiled once). */
    metadata: { [key: string]: PolicyValue };
  };
}

export interface RestrictIpsAction {
  type: 'restrict-ips';
  config: {
    /** CIDRs as written, or whole `${expr}` interpolations. */
    allow: string[];
    deny: string[];
    /** Defaults to true. */
    enforce: boolean;
  };
}

export type CompressionAlgorithm = 'gzip' | 'br' | 'deflate';

/** Header names and values as written (values may hold `${...}`). */
export type HeaderList = Array<[string, string]>;

/** The actions only HTTP phases have (HTTP-POLICY.md §2); configs normalized, defaults filled in. */
export type HttpAction =
  | DenyAction
  | { type: 'add-headers'; config: { headers: HeaderList } }
  /** Lower-case names. */
  | { type: 'remove-headers'; config: { headers: string[] } }
  | { type: 'custom-response'; config: { status_code: number; body: string; headers: HeaderList } }
  | { type: 'redirect'; config: { from: string | null; to: string; status_code: number; headers: HeaderList } }
  | { type: 'url-rewrite'; config: { from: string | null; to: string } }
  | { type: 'set-vars'; config: { vars: Array<[string, PolicyValue]> } }
  | {
      type: 'circuit-breaker';
      config: { error_threshold: number; volume_threshold: number; window_duration: number; tripped_duration: number; num_buckets: number };
    }
  /** Algorithms in the order preferred when the client rates several equally. */
  | { type: 'compress-response'; config: { algorithms: CompressionAlgorithm[] } }
  | { type: 'basic-auth'; config: { credentials: Array<{ username: string; password: string }>; realm: string; enforce: boolean } }
  /** `secret` may interpolate; never logged nor quoted in a message. */
  | { type: 'verify-webhook'; config: { provider: string; secret: string; enforce: boolean } }
  /** The edge login actions (IDENTITY.md §1–§2); the client secret is never logged nor quoted. */
  | { type: 'openid-connect' | 'oauth'; config: LoginConfig }
  | { type: 'jwt-validation'; config: JwtValidationConfig }
  | {
      type: 'rate-limit';
      config: { name: string; algorithm: 'sliding_window'; capacity: number; rate: string; rateSeconds: number; bucket_key: string[] };
    };

/** on_tcp_connect: closes the connection, as deny does. */
export interface CloseConnectionAction {
  type: 'close-connection';
  config: null;
}

export type ValidatedAction = LogAction | RestrictIpsAction | CloseConnectionAction | HttpAction | TerminateTlsAction;

export interface ValidatedRule {
  /** null when the rule has no `name`. */
  name: string | null;
  /** CEL expressions, all of type bool, ANDed; empty means "always". */
  expressions: string[];
  /** At least one; nothing follows a `deny`. */
  actions: ValidatedAction[];
}

/** The normalized rules of every phase (a phase the document lacks has none). */
export interface ValidatedPolicy {
  /** The on_tcp_connect rules (`phases.on_tcp_connect`), which the connection gate runs. */
  rules: ValidatedRule[];
  phases: Readonly<Record<PhaseName, ValidatedRule[]>>;
}

export type PolicyValidation = { ok: true; policy: ValidatedPolicy } | { ok: false; error: PolicyError };

export interface ValidatePolicyOptions {
  /** Most rules a policy may hold (MAX_POLICY_RULES); default 25. */
  maxRules?: number;
  /**
   * Whose policy it is, for the wording of messages: a TLS edge's module (default) or the policy
   * an agent sends with a bind (whose HTTP phases are refused too, but not "on a TLS edge").
   */
  subject?: PolicySubject;
  /**
   * The kind of endpoint whose policy it is, which decides the phases it may hold
   * (phases.ts); default a TLS edge's module, or a TCP endpoint when `subject` is `endpoint`.
   */
  endpoint?: EndpointKind;
}

export type PolicySubject = 'edge' | 'endpoint';
