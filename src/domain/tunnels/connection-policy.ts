import { compilePolicy, evaluate, type EndpointKind, type PolicyConnection, type PolicyProgram, type PolicySubject, type Verdict } from '../policy/index.js';
import { AgentRefusal, agentErrors } from './agent-errors.js';
import { concatPrograms, optionsDocument } from '../policy/index.js';
import type { EdgeTlsOption } from './edge-tls.js';
import { withinCookieDomain } from '../identity/login-config.js';

/**
 * What decides whether one public connection may reach its tunnel (TUNNELS.md §5): the bind's
 * `IPRestriction` first (as `restrict-ips` with enforce), then a traffic policy (the agent's, or a
 * TLS edge's module). Compiled once per bind or module version; evaluated per connection.
 */
export interface ConnectionPolicy {
  readonly ipRestriction: PolicyProgram | undefined;
  readonly policy: PolicyProgram | undefined;
  /** The bind's served endpoint options (BasicAuth, RequestHeaders, …) as rules, run before `policy`'s HTTP phases. */
  readonly options?: PolicyProgram | undefined;
  /** TLS the bind's options ask burrow to terminate (MutualTLSCA, MutualTLSAtEdge, TLSTermination). */
  readonly edgeTls?: EdgeTlsOption | undefined;
  /** What it was compiled from: another instance compiles the same to run it on connections it accepts (CLUSTER.md §2). */
  readonly source?: PolicySource;
}

/** compileBindPolicy's inputs, as they travel between instances. */
export interface PolicySource {
  readonly trafficPolicy: string | undefined;
  readonly ipRestriction: IpRestrictionOption | null | undefined;
  readonly kind: EndpointKind;
  readonly endpointOptions: Readonly<Record<string, unknown>> | undefined;
}

export const NO_POLICY: ConnectionPolicy = Object.freeze({ ipRestriction: undefined, policy: undefined, options: undefined });

export interface IpRestrictionOption {
  readonly allowCidrs: readonly string[];
  readonly denyCidrs: readonly string[];
}

/**
 * Compiles a bind's IPRestriction and TrafficPolicy, refusing the bind with the policy error's
 * code and message when either is invalid (the same validation as the REST API's; messages name
 * `subject`, an endpoint unless a TLS edge's module is compiled). `kind` decides the phases the
 * policy may hold (an HTTP phase on a tcp or tls endpoint is ERR_NGROK_2230).
 */
export function compileBindPolicy(
  trafficPolicy: string | undefined,
  ipRestriction: IpRestrictionOption | null | undefined,
  maxRules: number,
  kind: EndpointKind,
  endpointOptions?: Readonly<Record<string, unknown>>,
): ConnectionPolicy {
  const subject: PolicySubject = kind === 'tls-edge' ? 'edge' : 'endpoint';
  return {
    ipRestriction: ipRestriction && (ipRestriction.allowCidrs.length > 0 || ipRestriction.denyCidrs.length > 0) ? compileIpRestriction(ipRestriction) : undefined,
    policy: trafficPolicy === undefined || trafficPolicy === '' ? undefined : compileOrRefuse(trafficPolicy, maxRules, subject, kind),
    options: endpointOptions === undefined ? undefined : compileOptions(endpointOptions, kind),
    source: { trafficPolicy, ipRestriction, kind, endpointOptions },
  };
}

/** The same policy compiled from what another instance compiled (its source): the rule limit was checked there. */
export function compilePolicySource(source: PolicySource): ConnectionPolicy {
  return compileBindPolicy(source.trafficPolicy, source.ipRestriction, Number.MAX_SAFE_INTEGER, source.kind, source.endpointOptions);
}

/** HTTP-POLICY.md §4: the served endpoint options as a program of the same engine (no rule limit: the agent wrote no policy). */
function compileOptions(opts: Readonly<Record<string, unknown>>, kind: EndpointKind): PolicyProgram | undefined {
  const options = optionsDocument(opts);
  if (!options.ok) throw agentErrors.unservedOption(`${options.option} (${options.message})`, kind);
  return options.document === undefined ? undefined : compileOrRefuse(options.document, 1000, 'endpoint', kind);
}

/** The HTTP phases an endpoint runs: its options' rules, then its policy's (one program, built once per pair). */
const combined = new WeakMap<ConnectionPolicy, PolicyProgram | undefined>();

export function httpProgram(policy: ConnectionPolicy): PolicyProgram | undefined {
  if (policy.options === undefined) return policy.policy;
  if (policy.policy === undefined) return policy.options;
  if (!combined.has(policy)) combined.set(policy, concatPrograms(policy.options, policy.policy));
  return combined.get(policy);
}

/**
 * A login action's auth_cookie_domain must be the endpoint's host or a parent of it (for a
 * wildcard endpoint, of the name under its `*.`): a browser refuses a cookie for another domain,
 * so such a policy would log users in for nothing. ERR_NGROK_2204, as the action's other checks.
 */
export function cookieDomainRefusal(policy: ConnectionPolicy, hostname: string): AgentRefusal | undefined {
  const program = httpProgram(policy);
  if (!program) return undefined;
  const host = hostname.toLowerCase().replace(/^\*\./, '');
  for (const rule of program.phases.on_http_request) {
    for (const action of rule.actions) {
      if ((action.type !== 'openid-connect' && action.type !== 'oauth') || action.login.cookieDomain === undefined) continue;
      const domain = action.login.cookieDomain;
      if (!withinCookieDomain(host, domain)) {
        return new AgentRefusal(2204, `${action.type}: config.auth_cookie_domain ${JSON.stringify(domain)} must be the endpoint's host ${JSON.stringify(hostname)} or a parent domain of it; a browser keeps no cookie set for another domain.`);
      }
    }
  }
  return undefined;
}

function compileIpRestriction(option: IpRestrictionOption): PolicyProgram {
  const config: Record<string, unknown> = { enforce: true };
  if (option.allowCidrs.length > 0) config.allow = [...option.allowCidrs];
  if (option.denyCidrs.length > 0) config.deny = [...option.denyCidrs];
  const document = JSON.stringify({ on_tcp_connect: [{ name: 'IPRestriction', actions: [{ type: 'restrict-ips', config }] }] });
  return compileOrRefuse(document, 1, 'endpoint', 'tcp');
}

function compileOrRefuse(document: string, maxRules: number, subject: PolicySubject, endpoint: EndpointKind): PolicyProgram {
  const compiled = compilePolicy(document, { maxRules, subject, endpoint });
  if (compiled.ok) return compiled.program;
  throw new AgentRefusal(Number(compiled.error.code.replace('ERR_NGROK_', '')), compiled.error.message);
}

/** A connection's verdicts: the IPRestriction's (when any), then the policy's if still allowed. */
export interface ConnectionVerdict {
  readonly allowed: boolean;
  /** `ip_restriction` or `traffic_policy`: which closed the connection. */
  readonly closedBy: 'ip_restriction' | 'traffic_policy' | undefined;
  readonly verdicts: readonly Verdict[];
}

const ALLOWED: ConnectionVerdict = Object.freeze({ allowed: true, closedBy: undefined, verdicts: [] });

export function evaluateConnection(policy: ConnectionPolicy, connection: PolicyConnection): ConnectionVerdict {
  if (policy.ipRestriction === undefined && policy.policy === undefined) return ALLOWED;
  const verdicts: Verdict[] = [];
  if (policy.ipRestriction) {
    const verdict = evaluate(policy.ipRestriction, connection);
    verdicts.push(verdict);
    if (!verdict.allowed) return { allowed: false, closedBy: 'ip_restriction', verdicts };
  }
  if (policy.policy) {
    const verdict = evaluate(policy.policy, connection);
    verdicts.push(verdict);
    if (!verdict.allowed) return { allowed: false, closedBy: 'traffic_policy', verdicts };
  }
  return { allowed: true, closedBy: undefined, verdicts };
}
