/**
 * The phases of a traffic policy (HTTP-POLICY.md §1), one descriptor each: its name, the endpoint
 * kinds that run it, the actions it serves and its variables. Validation, compilation and
 * evaluation consult these descriptors; nothing else names a phase.
 */
import { HTTP_REQUEST_VARIABLES, HTTP_RESPONSE_VARIABLES, TCP_VARIABLES, type VariableTable } from './variables.js';

export type PhaseName = 'on_tcp_connect' | 'on_http_request' | 'on_http_response';

/** Whose policy is validated: an endpoint of a kind, or a TLS edge's traffic policy module. */
export type EndpointKind = 'tcp' | 'tls' | 'http' | 'https' | 'tls-edge';

export interface PhaseDescriptor {
  readonly name: PhaseName;
  /** The endpoint kinds that run the phase. */
  readonly runsOn: ReadonlySet<EndpointKind>;
  /** Action types served in this phase, in the order messages list them. */
  readonly actions: readonly string[];
  /** Variables of the phase's CEL environment, as (nested) object schemas. */
  readonly variables: VariableTable;
}

const ALL_KINDS: ReadonlySet<EndpointKind> = new Set(['tcp', 'tls', 'http', 'https', 'tls-edge']);
const HTTP_KINDS: ReadonlySet<EndpointKind> = new Set(['http', 'https']);

export const PHASES: { readonly [P in PhaseName]: PhaseDescriptor } = {
  on_tcp_connect: { name: 'on_tcp_connect', runsOn: ALL_KINDS, actions: ['close-connection', 'deny', 'log', 'restrict-ips', 'set-vars', 'terminate-tls'], variables: TCP_VARIABLES },
  on_http_request: {
    name: 'on_http_request',
    runsOn: HTTP_KINDS,
    actions: [
      'add-headers',
      'basic-auth',
      'circuit-breaker',
      'custom-response',
      'deny',
      'jwt-validation',
      'log',
      'oauth',
      'openid-connect',
      'rate-limit',
      'redirect',
      'remove-headers',
      'restrict-ips',
      'set-vars',
      'url-rewrite',
      'verify-webhook',
    ],
    variables: HTTP_REQUEST_VARIABLES,
  },
  on_http_response: {
    name: 'on_http_response',
    runsOn: HTTP_KINDS,
    actions: ['add-headers', 'compress-response', 'custom-response', 'log', 'remove-headers', 'set-vars'],
    variables: HTTP_RESPONSE_VARIABLES,
  },
};

export const PHASE_ORDER: readonly PhaseName[] = ['on_tcp_connect', 'on_http_request', 'on_http_response'];

/**
 * Legacy top-level keys: `inbound` is the first phase an endpoint runs (on_http_request on HTTP
 * endpoints, on_tcp_connect elsewhere), `outbound` the response phase.
 */
export function phaseOfKey(key: string, kind: EndpointKind): PhaseDescriptor | undefined {
  if (key === 'inbound') return HTTP_KINDS.has(kind) ? PHASES.on_http_request : PHASES.on_tcp_connect;
  if (key === 'outbound') return PHASES.on_http_response;
  return (PHASES as Record<string, PhaseDescriptor | undefined>)[key];
}

/** The phases `kind` runs, by name, for messages ("on_tcp_connect" or "on_tcp_connect, on_http_request and on_http_response"). */
export function phasesText(kind: EndpointKind): string {
  const names = PHASE_ORDER.filter((name) => PHASES[name].runsOn.has(kind));
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
}

/** The phase whose rules a validation is checking now (validation is synchronous; see withPhase). */
let current: PhaseDescriptor = PHASES.on_tcp_connect;

export function currentPhase(): PhaseDescriptor {
  return current;
}

export function withPhase<T>(phase: PhaseDescriptor, work: () => T): T {
  const outer = current;
  current = phase;
  try {
    return work();
  } finally {
    current = outer;
  }
}
