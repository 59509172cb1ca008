import type { EdgeRouteReader } from '../../domain/edges/types.js';
import { compileBindPolicy, NO_POLICY, type ConnectionPolicy } from '../../domain/tunnels/connection-policy.js';
import type { Logger } from '../../observability/logger.js';

/** How long an edge lookup (or its absence) is trusted: changes reach new connections within 1 s. */
export const EDGE_CACHE_TTL_MS = 500;
const MAX_CACHED_HOSTS = 10_000;
const MAX_CACHED_POLICIES = 1_000;

/** What a connection to an edge's hostport needs: its backend's labels and its policy, compiled. */
export interface ResolvedEdge {
  readonly edgeId: string;
  readonly accountId: string;
  readonly hostport: string;
  /** The labels of the enabled backend's tunnel group; null without an enabled backend. */
  readonly labels: Readonly<Record<string, string>> | null;
  readonly policy: ConnectionPolicy;
  /** The enabled tls_termination module's, when it terminates at the edge; else null (passthrough). */
  readonly termination: { readonly minVersion: string | null } | null;
}

interface Cached {
  readonly expiresAt: number;
  readonly value: Promise<ResolvedEdge | undefined>;
}

/** A policy that cannot compile (it was validated when stored, so this is a bug): fail closed. */
const DENY_ALL = compileBindPolicy('{"on_tcp_connect":[{"name":"invalid stored policy","actions":[{"type":"deny"}]}]}', null, 1, 'tls-edge');

/**
 * TLS edges by SNI host (TUNNELS.md §4–§5), read from the database through a cache of at most
 * half a second, so a module change (PUT/DELETE, an edge PATCH) on any instance applies to new
 * connections within a second; open connections are not touched. A policy is compiled once per
 * distinct document.
 */
export class EdgeDirectory {
  private readonly hosts = new Map<string, Cached>();
  private readonly programs = new Map<string, ConnectionPolicy>();

  constructor(
    private readonly reader: EdgeRouteReader,
    private readonly maxPolicyRules: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  resolve(host: string): Promise<ResolvedEdge | undefined> {
    const key = host.toLowerCase();
    const cached = this.hosts.get(key);
    const now = this.now();
    if (cached && cached.expiresAt > now) return cached.value;
    if (this.hosts.size >= MAX_CACHED_HOSTS) this.hosts.clear();
    const value = this.lookUp(key);
    this.hosts.set(key, { expiresAt: now + EDGE_CACHE_TTL_MS, value });
    // A failed lookup is not remembered: the next connection asks again.
    value.catch(() => this.hosts.delete(key));
    return value;
  }

  private async lookUp(host: string): Promise<ResolvedEdge | undefined> {
    const route = await this.reader.findEdgeByHost(host);
    if (!route) return undefined;
    return {
      edgeId: route.edgeId,
      accountId: route.accountId,
      hostport: route.hostport,
      labels: route.backend?.enabled ? route.backend.labels : null,
      policy: route.policy?.enabled ? this.compiled(route.policy.value) : NO_POLICY,
      termination: route.tlsTermination?.enabled && route.tlsTermination.terminateAt === 'edge' ? { minVersion: route.tlsTermination.minVersion } : null,
    };
  }

  private compiled(document: string): ConnectionPolicy {
    let policy = this.programs.get(document);
    if (policy) return policy;
    try {
      policy = compileBindPolicy(document, null, Math.max(this.maxPolicyRules, 1000), 'tls-edge');
    } catch (error) {
      this.logger.error({ err: error }, 'a stored edge traffic policy does not compile: its connections are denied');
      policy = DENY_ALL;
    }
    if (this.programs.size >= MAX_CACHED_POLICIES) this.programs.clear();
    this.programs.set(document, policy);
    return policy;
  }
}
