import { agentErrors } from './agent-errors.js';
import { compileBindPolicy, cookieDomainRefusal, type ConnectionPolicy } from './connection-policy.js';
import type { EndpointKind } from '../policy/index.js';

/** PatchTunnelState (AGENT-PROTOCOL.md §5, type 10): what the agent asks to change; null = unchanged. */
export interface TunnelPatch {
  readonly name: string | null;
  readonly description: string | null;
  readonly metadata: string | null;
  readonly poolingEnabled: boolean | null;
  readonly trafficPolicy: string | null;
}

/** The tunnel as it is now. */
export interface PatchedTunnelState {
  readonly labeled: boolean;
  readonly poolingEnabled: boolean;
  readonly policy: ConnectionPolicy;
  /** The endpoint's kind (the scheme of its URL; tcp for a labeled tunnel, whose patch is refused anyway). */
  readonly kind: EndpointKind;
  /** The endpoint's host name (http and https), which a login's auth_cookie_domain must cover. */
  readonly hostname?: string | undefined;
}

/** What to apply: a new policy (the bind's IP restriction kept) when the traffic policy changes. */
export interface TunnelPatchPlan {
  readonly policy: ConnectionPolicy | undefined;
  readonly trafficPolicy: string | undefined;
  readonly metadata: string | undefined;
}

/**
 * Checks a patch and compiles its traffic policy, as a bind's (the same errors and codes). Name
 * and description have nowhere to go here (the live objects show neither) and change nothing;
 * pooling cannot change while bound, since others may share the endpoint: unbind and bind again.
 */
export function planTunnelPatch(patch: TunnelPatch, current: PatchedTunnelState, maxPolicyRules: number): TunnelPatchPlan {
  if (patch.poolingEnabled !== null && patch.poolingEnabled !== current.poolingEnabled) {
    throw agentErrors.poolingFixed(current.poolingEnabled);
  }
  let policy: ConnectionPolicy | undefined;
  if (patch.trafficPolicy !== null) {
    if (current.labeled) throw agentErrors.labeledPolicy();
    const compiled = compileBindPolicy(patch.trafficPolicy, undefined, maxPolicyRules, current.kind);
    // the source too: other instances compile the tunnel's policy from it (CLUSTER.md §2)
    const source = current.policy.source && { ...current.policy.source, trafficPolicy: patch.trafficPolicy };
    policy = { ...current.policy, policy: compiled.policy, ...(source ? { source } : {}) };
    const cookieDomain = current.hostname === undefined ? undefined : cookieDomainRefusal(policy, current.hostname);
    if (cookieDomain) throw cookieDomain;
  }
  return {
    policy,
    trafficPolicy: patch.trafficPolicy ?? undefined,
    metadata: patch.metadata ?? undefined,
  };
}
