/**
 * The one table of the options an agent's Bind may carry in `Opts` (AGENT-PROTOCOL.md §5,
 * HTTP-POLICY.md §4): per option its wire spelling, the protos the official agents send it for,
 * and how burrow serves it. The protocol layer (which names it reads and echoes), the bind plan
 * (which it refuses) and the policy engine (which it turns into rules) all read this table. It is
 * in domain/ because the bind plan, a domain use case, must consult it.
 */
import type { BindProto } from './binds.js';

export type BindOptionService =
  /** Read by the protocol layer into its own field (hostnames, ProxyProto, IPRestriction, TrafficPolicy). */
  | { readonly as: 'field' }
  /** Turned into traffic policy rules that run before the endpoint's policy (endpoint-options.ts). */
  | { readonly as: 'rules' }
  /** Settings of the TLS burrow terminates at the edge (edge-tls.ts). */
  | { readonly as: 'tls' }
  /** Changes nothing a public client sees (the agent's own behaviour, or the legacy spelling of a field). */
  | { readonly as: 'agent-side' }
  /** Refused by name (TUNNELS.md §3), with the code and why. */
  | { readonly as: 'refused'; readonly code: number; readonly why: string };

export interface BindOptionSpec {
  /** The wire spelling: PascalCase as ngrok-rust and ngrok-go send it (keys are read in any case). */
  readonly name: string;
  /** The protos it applies to; set on another proto it is refused, unless it is agent-side. */
  readonly protos: readonly BindProto[];
  readonly service: BindOptionService;
  /** Written back in the BindResp's `Opts` in this spelling (AGENT-PROTOCOL.md §5 names it). */
  readonly echoed: boolean;
}

const HTTP: readonly BindProto[] = ['http', 'https'];
const HOSTNAMES: readonly BindProto[] = ['http', 'https', 'tls'];
const ALL: readonly BindProto[] = ['http', 'https', 'tcp', 'tls'];
const FIELD = { as: 'field' } as const;
const RULES = { as: 'rules' } as const;
const TLS = { as: 'tls' } as const;
const AGENT_SIDE = { as: 'agent-side' } as const;

const option = (name: string, protos: readonly BindProto[], service: BindOptionService, echoed = true): BindOptionSpec => ({ name, protos, service, echoed });

export const BIND_OPTIONS: readonly BindOptionSpec[] = [
  option('Domain', HOSTNAMES, FIELD),
  option('Hostname', HOSTNAMES, FIELD),
  option('Subdomain', HOSTNAMES, FIELD),
  option('Addr', ['tcp'], FIELD),
  option('ProxyProto', ALL, FIELD),
  option('IPRestriction', ALL, FIELD),
  option('TrafficPolicy', ALL, FIELD),
  // Legacy basic auth ("user:password"), sent empty by RS: refused when set, as it changes who may connect.
  option('Auth', HTTP, { as: 'refused', code: 301, why: 'use BasicAuth' }),
  option('HostHeaderRewrite', HTTP, AGENT_SIDE),
  option('LocalUrlScheme', HTTP, AGENT_SIDE),
  option('BasicAuth', HTTP, RULES),
  option('RequestHeaders', HTTP, RULES),
  option('ResponseHeaders', HTTP, RULES),
  option('UserAgentFilter', HTTP, RULES),
  option('Compression', HTTP, RULES),
  option('CircuitBreaker', HTTP, RULES),
  option('WebhookVerification', HTTP, RULES),
  // Edge logins (IDENTITY.md): the openid-connect / oauth action, and the allow lists as rules.
  option('OAuth', HTTP, RULES),
  option('OIDC', HTTP, RULES),
  option('MutualTLSCA', ['https'], TLS),
  option('MutualTLSAtEdge', ['tls'], TLS),
  option('TLSTermination', ['tls'], TLS),
  // The agent checks client certificates itself: burrow passes the TLS through.
  option('MutualTLSAtAgent', ['tls'], AGENT_SIDE),
  option('WebsocketTCPConverter', HTTP, { as: 'refused', code: 301, why: 'burrow does not convert WebSocket connections to TCP' }),
  // ssh (GO legacy): never sent for the protos burrow serves.
  option('Username', [], AGENT_SIDE, false),
  option('Password', [], AGENT_SIDE, false),
];

const BY_LOWER_NAME = new Map(BIND_OPTIONS.map((spec) => [spec.name.toLowerCase(), spec]));

/** The table's line for an option, by its name in any case. */
export function bindOption(name: string): BindOptionSpec | undefined {
  return BY_LOWER_NAME.get(name.toLowerCase());
}

/** The names of the options served as `service`, e.g. every option turned into rules. */
export function optionsServedAs(service: BindOptionService['as']): ReadonlySet<string> {
  return new Set(BIND_OPTIONS.filter((spec) => spec.service.as === service).map((spec) => spec.name));
}

/**
 * Why a bind of `proto` that sets `name` is refused, or undefined when it is served (or changes
 * nothing a client sees). An option the table does not know is left to the protocol layer, which
 * only passes known names on.
 */
export function optionRefusal(name: string, proto: BindProto): { code: number; why: string } | undefined {
  const spec = bindOption(name);
  if (!spec) return undefined;
  if (spec.service.as === 'refused') return { code: spec.service.code, why: spec.service.why };
  if (spec.protos.includes(proto) || spec.service.as === 'agent-side' || spec.service.as === 'field') return undefined;
  return { code: 301, why: `it applies to ${spec.protos.join(' and ')} endpoints` };
}
