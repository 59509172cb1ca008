import { newId } from '../ids.js';
import { agentErrors, AgentRefusal } from './agent-errors.js';
import { checkLabels, publicUrl, rememberedAsk, resolveBindTarget, type BindAsk, type BindProto, type BindTarget, type BoundTarget, type EdgeSettings } from './binds.js';
import { compileBindPolicy, cookieDomainRefusal, NO_POLICY, type ConnectionPolicy, type IpRestrictionOption } from './connection-policy.js';
import { readRebindToken, rebindToken } from './tokens.js';
import { optionRefusal } from './bind-options.js';
import { edgeTlsOf } from './edge-tls.js';
import type { Endpoint, Tunnel } from './types.js';

/**
 * The bind use case, first half: everything TUNNELS.md §3 decides before anything is claimed or
 * written, as a pure function of the request and the session. A new bind rule goes here (a
 * refusal, an option, a row field); the executor (bind-execution.ts) only claims, pools and
 * writes what the plan says, in order, undoing it all on failure.
 */

const PROTOS: ReadonlySet<string> = new Set(['http', 'https', 'tcp', 'tls']);

/** What an agent's Bind asks, as read by the protocol layer. */
export interface BindRequestFacts {
  /** The tunnel id a rebind asks to keep ('' on a first bind), proven by `token`. */
  readonly id: string;
  readonly token: string;
  readonly proto: string;
  readonly hostname: string;
  readonly domain: string;
  readonly subdomain: string;
  readonly addr: string;
  readonly trafficPolicy: string | null;
  readonly ipRestriction: IpRestrictionOption | null;
  /** Names of the other options set in the bind. */
  readonly otherOptions: readonly string[];
  readonly ipPolicyRef: string;
  readonly bindings: readonly string[];
  readonly poolingEnabled: boolean;
  readonly forwardsTo: string;
  readonly metadata: string;
  /** The bind's `Opts`: the options bind-options.ts serves as rules or TLS settings are read from it (HTTP-POLICY.md §4). */
  readonly endpointOptions?: Readonly<Record<string, unknown>>;
}

/** The session a bind arrives on, as the plan needs it. */
export interface BindingSession {
  readonly id: string;
  readonly accountId: string;
  readonly instanceId: string;
  /** The credential's owner: the endpoint's principal. */
  readonly principalId: string;
  /** Keys the rebind Token. */
  readonly tokenHash: string;
  readonly credentialId: string;
  /** The credential's ACL as stored now; undefined when the credential is gone (revoked). */
  readonly acl: readonly string[] | undefined;
  /** Tunnels the session holds now. */
  readonly tunnelCount: number;
}

export interface BindRules {
  readonly edge: EdgeSettings;
  /** 0 = no limit. */
  readonly maxEndpointsPerSession: number;
  readonly maxPolicyRules: number;
}

/** A bind the plan accepts: what to claim, in order, and what to write once one is claimed. */
export interface AcceptedBind {
  readonly refusal?: undefined;
  readonly proto: BindProto;
  readonly tunnelId: string;
  readonly accountId: string;
  readonly poolingEnabled: boolean;
  readonly policy: ConnectionPolicy;
  /**
   * Targets to try in order. A remembered target (a rebind's old URL) comes first and is given up,
   * not refused, when it is taken or not free; the last choice is the bind's own, or its refusal.
   */
  readonly choices: readonly BindChoice[];
  /** Writes the rows for the target claimed (a random TCP port is known only then). */
  place(bound: BoundTarget): BindPlacement;
}

export type BindChoice = { readonly target: BindTarget; readonly remembered: boolean } | { readonly refusal: AgentRefusal };

export type BindPlan = AcceptedBind | { readonly refusal: AgentRefusal };

/** What a bind writes and answers once its target is claimed. */
export interface BindPlacement {
  readonly bound: BoundTarget;
  readonly url: string;
  /** The endpoint row, written when this bind opens the URL's pool. */
  readonly endpoint: Endpoint;
  /** The tunnel row, with the endpoint id of the pool it joins. */
  tunnelRow(endpointId: string): Tunnel;
  /** A URL whose pool would take this one's connections (a tls and an https endpoint of one name share the TLS port's SNI). */
  readonly rival: string | undefined;
  /** What the answer's Opts fill in. */
  readonly boundOpts: { readonly hostname: string } | { readonly addr: string };
  /** The answer's `Extra.Token`. */
  readonly token: string;
}

/**
 * Plans a bind (TUNNELS.md §3). Refusals, first that applies: an unknown protocol (301), the
 * session's endpoint limit (324), a revoked credential (300), an option burrow does not serve
 * (301), the target (0, 326, 316, 307, 308, 356), the traffic policy or IP restriction (the
 * policy error's code). `previousServed`: the id the rebind asks to keep is served by a session
 * here, so the bind gets a new id (its row and pool place are the other's).
 */
export function planBind(request: BindRequestFacts, session: BindingSession, rules: BindRules, previousServed: boolean, now: string): BindPlan {
  if (!PROTOS.has(request.proto)) return refused(agentErrors.badBindPayload(`Unknown protocol ${JSON.stringify(request.proto.slice(0, 20))}; burrow serves http, https, tcp and tls.`));
  const early = sessionRefusal(session, rules);
  if (early) return refused(early);
  const proto = request.proto as BindProto;
  const unserved = unservedOption(request, proto);
  if (unserved !== undefined) return refused(agentErrors.unservedOption(unserved.name, proto, unserved.why));
  const credential = { id: session.credentialId, accountId: session.accountId, acl: session.acl ?? [] };
  const ask: BindAsk = { proto, hostname: request.hostname, domain: request.domain, subdomain: request.subdomain, addr: request.addr };
  const own = attempt(() => resolveBindTarget(ask, credential, rules.edge));
  const http = proto === 'http' || proto === 'https';
  const policy = attempt((): ConnectionPolicy => {
    const compiled = compileBindPolicy(request.trafficPolicy ?? undefined, request.ipRestriction, rules.maxPolicyRules, proto, http ? request.endpointOptions : undefined);
    const edgeTls = edgeTlsOf(request.endpointOptions ?? {}, proto);
    return edgeTls ? { ...compiled, edgeTls } : compiled;
  });
  if (policy instanceof AgentRefusal) return refused(own instanceof AgentRefusal ? own : policy);
  const cookieDomain = own instanceof AgentRefusal || own.kind !== 'hostname' ? undefined : cookieDomainRefusal(policy, own.hostname);
  if (cookieDomain) return refused(cookieDomain);
  const previous = previousServed || !request.id.startsWith('tn_') ? undefined : readRebindToken(session.tokenHash, request.id, request.token);
  const remembered = previous?.target ? rememberedAsk(ask, previous.target, rules.edge.publicHost) : undefined;
  const keep = remembered ? attempt(() => resolveBindTarget(remembered, credential, rules.edge)) : undefined;
  const choices: BindChoice[] = [];
  if (keep && !(keep instanceof AgentRefusal)) choices.push({ target: keep, remembered: true });
  choices.push(own instanceof AgentRefusal ? { refusal: own } : { target: own, remembered: false });
  if (choices.length === 1 && own instanceof AgentRefusal) return refused(own);
  const tunnelId = previous ? request.id : newId('tn').id;
  return {
    proto,
    tunnelId,
    accountId: session.accountId,
    poolingEnabled: request.poolingEnabled,
    policy,
    choices,
    place: (bound) => placement(request, session, rules.edge, proto, tunnelId, bound, now),
  };
}

function placement(request: BindRequestFacts, session: BindingSession, edge: EdgeSettings, proto: BindProto, tunnelId: string, bound: BoundTarget, now: string): BindPlacement {
  const url = boundUrl(bound, edge);
  const host = bound.kind === 'tcp' ? edge.publicHost : bound.hostname;
  const port = bound.kind === 'tcp' ? bound.port : proto === 'http' ? (edge.httpPort ?? 80) : (edge.tlsPort ?? 443);
  const rival = bound.kind === 'hostname' && bound.proto !== 'http' ? boundUrl({ ...bound, proto: bound.proto === 'tls' ? 'https' : 'tls' }, edge) : undefined;
  const owner = { accountId: session.accountId, instanceId: session.instanceId, sessionId: session.id };
  return {
    bound,
    url,
    rival,
    endpoint: {
      id: newId('ep').id,
      ...owner,
      url,
      proto,
      host,
      port,
      principalId: session.principalId,
      trafficPolicy: request.trafficPolicy ?? '',
      poolingEnabled: request.poolingEnabled,
      createdAt: now,
      updatedAt: now,
    },
    tunnelRow: (endpointId) => ({ id: tunnelId, ...owner, proto, publicUrl: url, labels: null, forwardsTo: request.forwardsTo, metadata: request.metadata, startedAt: now, endpointId }),
    boundOpts: bound.kind === 'tcp' ? { addr: `${host}:${bound.port}` } : { hostname: bound.hostname },
    token: rebindToken(session.tokenHash, tunnelId, bound),
  };
}

/** What a labeled tunnel asks (StartTunnelWithLabel). */
export interface LabeledRequestFacts {
  readonly labels: Readonly<Record<string, string>>;
  readonly forwardsTo: string;
  readonly metadata: string;
}

/** Plans a labeled tunnel: refused by the endpoint limit (324), a revoked credential (300) or a label the ACL does not permit (301, 399). */
export function planLabeled(request: LabeledRequestFacts, session: BindingSession, rules: BindRules, now: string): { refusal: AgentRefusal } | { refusal?: undefined; row: Tunnel; policy: ConnectionPolicy } {
  const refusal = sessionRefusal(session, rules) ?? attempt(() => checkLabels(request.labels, { id: session.credentialId, accountId: session.accountId, acl: session.acl ?? [] }));
  if (refusal instanceof AgentRefusal) return refused(refusal);
  const row: Tunnel = {
    id: newId('tn').id,
    accountId: session.accountId,
    sessionId: session.id,
    instanceId: session.instanceId,
    proto: '',
    publicUrl: null,
    labels: { ...request.labels },
    forwardsTo: request.forwardsTo,
    metadata: request.metadata,
    startedAt: now,
    endpointId: null,
  };
  return { row, policy: NO_POLICY };
}

/** The URL a bound target is served at. */
export function boundUrl(target: BoundTarget, edge: EdgeSettings): string {
  if (target.kind === 'tcp') return publicUrl('tcp', edge.publicHost, target.port);
  return publicUrl(target.proto, target.hostname, target.proto === 'http' ? edge.httpPort : edge.tlsPort);
}

/** A name or port another account holds, asked for by `accountId`: 320 / 309. */
export function takenRefusal(target: { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number }, accountId: string, edge: EdgeSettings): AgentRefusal {
  return target.kind === 'hostname' ? agentErrors.domainTaken(target.hostname, accountId) : agentErrors.addressTaken(`${edge.publicHost}:${target.port}`, accountId);
}

/**
 * Whether a bind may join the URL's live pool (TUNNELS.md §3): a second bind of one URL needs
 * pooling on both sides (334), and a live rival URL takes its connections (334).
 */
export function poolRefusal(url: string, pooling: boolean, existing: { poolingEnabled: boolean } | undefined, rival?: { url: string; online: boolean }): AgentRefusal | undefined {
  if (rival?.online) return agentErrors.sniTaken(url, rival.url);
  if (existing && (!existing.poolingEnabled || !pooling)) return agentErrors.alreadyOnline(url);
  return undefined;
}

function sessionRefusal(session: BindingSession, rules: BindRules): AgentRefusal | undefined {
  const max = rules.maxEndpointsPerSession;
  if (max > 0 && session.tunnelCount >= max) return agentErrors.tooManyEndpoints(max);
  if (session.acl === undefined) return agentErrors.credentialRevoked(session.credentialId);
  return undefined;
}

function unservedOption(request: BindRequestFacts, proto: BindProto): { name: string; why: string } | undefined {
  for (const name of request.otherOptions) {
    const refusal = optionRefusal(name, proto);
    if (refusal) return { name, why: refusal.why };
  }
  if (request.ipPolicyRef !== '') return { name: 'IPPolicyRef', why: 'IP policies are not served: send the CIDRs in IPRestriction' };
  // Every endpoint here is public: an internal (or other) binding would be served to anyone.
  if (request.bindings.some((binding) => binding !== '' && binding.toLowerCase() !== 'public')) return { name: 'Bindings', why: 'every burrow endpoint is public' };
  return undefined;
}

function refused(refusal: AgentRefusal): { refusal: AgentRefusal } {
  return { refusal };
}

function attempt<T>(work: () => T): T | AgentRefusal {
  try {
    return work();
  } catch (error) {
    if (error instanceof AgentRefusal) return error;
    throw error;
  }
}
