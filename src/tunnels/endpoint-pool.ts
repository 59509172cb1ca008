// A public URL's pool of tunnels: which one a connection goes to, and whose policy it runs.
import { NO_POLICY, type ConnectionPolicy } from '../domain/tunnels/connection-policy.js';
import { policyMix, type PolicyMix } from '../domain/tunnels/policy-mix.js';
import type { BindProto } from '../domain/tunnels/binds.js';

/** What the public side needs to reach one tunnel: its agent connection and how to proxy to it. */
export interface LiveTunnel {
  readonly id: string;
  readonly sessionId: string;
  readonly accountId: string;
  /** Empty for a labeled tunnel. */
  readonly proto: BindProto | '';
  readonly url: string | null;
  readonly labels: Readonly<Record<string, string>> | null;
  /** PROXY protocol version the agent asked for (0 = none). */
  readonly proxyProto: 0 | 1 | 2;
  /** The bind's IPRestriction and traffic policy, compiled once; run on every connection. Replaced by PatchTunnelState. */
  policy: ConnectionPolicy;
  /** Set on a tunnel held by another instance: its connections are forwarded there (cluster/). */
  readonly remote?: RemoteHolder;
}

/** The instance holding a tunnel of another instance, and where its link listens. */
export interface RemoteHolder {
  readonly instanceId: string;
  readonly clusterAddr: string;
}

/** Tunnels to pick from, round-robin: an endpoint's pool, or an edge's backend. */
export interface TunnelChoice {
  pick(): LiveTunnel | undefined;
  /** Every tunnel pick() may return. */
  readonly candidates: readonly LiveTunnel[];
}

/** The tunnels serving one public URL; more than one only when every bind asked for pooling. */
export class EndpointPool implements TunnelChoice {
  /** This pool's own tunnels (this instance's, or one other instance's for a remote pool), oldest first. */
  readonly tunnels: LiveTunnel[] = [];
  private next = 0;
  /** Moves with every change of a tunnel or its policy: the policy mix is computed again after one. */
  private version = 0;
  private mixOf: { version: number; length: number; partner: EndpointPool | undefined; partnerVersion: number; partnerLength: number; mix: PolicyMix } | undefined;
  #partner: EndpointPool | undefined;

  constructor(
    readonly url: string,
    readonly endpointId: string,
    readonly poolingEnabled: boolean,
  ) {}

  /**
   * The other instances' pool of the same pooled URL (CLUSTER.md §2), set by the registry on a
   * local pool only: picks go round-robin over both, while this object stays the one routed to.
   */
  get partner(): EndpointPool | undefined {
    return this.#partner;
  }

  set partner(partner: EndpointPool | undefined) {
    this.#partner = partner;
    this.version++;
  }

  /**
   * The policy of the bind that opened the pool (the oldest tunnel in it): the one every
   * connection runs when all the tunnels run one (`mix` `same`), and the endpoint's `traffic_policy`.
   */
  get policy(): ConnectionPolicy {
    return this.tunnels[0]?.policy ?? NO_POLICY;
  }

  /**
   * How the policies of the pool's tunnels (its partner's too) differ: whether a connection's
   * tunnel is picked before its policy runs (docs/DECISIONS.md "Pooled endpoints with different
   * policies"). Compared again only after the pool changed.
   */
  get mix(): PolicyMix {
    const partner = this.#partner;
    const cached = this.mixOf;
    if (
      cached !== undefined &&
      cached.version === this.version &&
      cached.length === this.tunnels.length &&
      cached.partner === partner &&
      cached.partnerVersion === (partner?.version ?? 0) &&
      cached.partnerLength === (partner?.tunnels.length ?? 0)
    ) {
      return cached.mix;
    }
    const mix = policyMix(this.candidates.map((tunnel) => tunnel.policy));
    this.mixOf = { version: this.version, length: this.tunnels.length, partner, partnerVersion: partner?.version ?? 0, partnerLength: partner?.tunnels.length ?? 0, mix };
    return mix;
  }

  /** This pool's tunnels, then its partner's; a new array only when there is a partner. */
  get candidates(): readonly LiveTunnel[] {
    return this.#partner ? [...this.tunnels, ...this.#partner.tunnels] : this.tunnels;
  }

  /** Round-robin over the pool's tunnels and its partner's; undefined when there is none. */
  pick(): LiveTunnel | undefined {
    const own = this.tunnels.length;
    const total = own + (this.#partner?.tunnels.length ?? 0);
    if (total === 0) return undefined;
    this.next = (this.next + 1) % total;
    return this.next < own ? this.tunnels[this.next] : this.#partner!.tunnels[this.next - own];
  }

  /** Whether `tunnel` is still one pick() may return (a connection pinned to it keeps it then). */
  serves(tunnel: LiveTunnel): boolean {
    return this.tunnels.includes(tunnel) || (this.#partner?.tunnels.includes(tunnel) ?? false);
  }

  add(tunnel: LiveTunnel): void {
    this.tunnels.push(tunnel);
    this.version++;
  }

  /** A tunnel described again (another instance's) takes the old one's place, keeping its turn and age. */
  replace(old: LiveTunnel, tunnel: LiveTunnel): boolean {
    const index = this.tunnels.indexOf(old);
    if (index === -1) return false;
    this.tunnels[index] = tunnel;
    this.version++;
    return true;
  }

  /** A tunnel's new policy (PatchTunnelState): its next connections run it. */
  setPolicy(tunnel: LiveTunnel, policy: ConnectionPolicy): void {
    tunnel.policy = policy;
    this.version++;
  }

  remove(tunnelId: string): void {
    const index = this.tunnels.findIndex((tunnel) => tunnel.id === tunnelId);
    if (index === -1) return;
    this.tunnels.splice(index, 1);
    this.version++;
  }
}

/** A choice of one tunnel: a connection whose tunnel was picked before its policy ran. */
export function onlyTunnel(tunnel: LiveTunnel): TunnelChoice {
  return { candidates: [tunnel], pick: () => tunnel };
}
