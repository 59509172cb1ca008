import type { EdgeRouteReader } from '../../domain/edges/types.js';
import { publicUrl } from '../../domain/tunnels/binds.js';
import { labelNames } from '../../domain/tunnels/moving-names.js';
import type { Logger } from '../../observability/logger.js';
import type { EdgeResolver, EdgeRoute, LiveTunnel, TunnelRegistry } from '../registry.js';
import { EdgeDirectory } from './edge-directory.js';

/**
 * Connections to a TLS edge's hostport (TUNNELS.md §4): the edge's policy, then its enabled
 * backend's live labeled tunnels, round-robin per edge. No backend or no live tunnel: the
 * connection is closed (the TLS port finds no tunnel to open a stream to), in a cluster after a
 * route wait when a tunnel of the backend may be moving (route-or-wait.ts).
 */
export class EdgeRouting implements EdgeResolver {
  private readonly directory: EdgeDirectory;
  /** The last pick of each edge's backend. */
  private readonly turns = new Map<string, number>();

  constructor(
    reader: EdgeRouteReader,
    private readonly registry: TunnelRegistry,
    maxPolicyRules: number,
    logger: Logger,
    /** EDGE_TLS_PORT as published: the port of a hostport that names none. */
    private readonly tlsPort: number,
  ) {
    this.directory = new EdgeDirectory(reader, maxPolicyRules, logger);
  }

  async resolveEdge(sni: string): Promise<EdgeRoute | undefined> {
    const { registry, tlsPort, turns } = this;
    const edge = await this.directory.resolve(sni);
    if (!edge) return undefined;
    const { labels } = edge;
    const host = edge.hostport.slice(0, edge.hostport.lastIndexOf(':'));
    const port = Number(edge.hostport.slice(edge.hostport.lastIndexOf(':') + 1));
    return {
      edgeId: edge.edgeId,
      policy: edge.policy,
      termination: edge.termination,
      // the URL as public URLs are written (TUNNELS.md §1): the scheme's default port left out
      endpoint: { url: publicUrl('tls', host, port), addr: edge.hostport, host, id: edge.edgeId, protocol: 'tls', port: port || tlsPort },
      backendNames: labels ? labelNames(edge.accountId, labels) : [],
      backend: {
        get candidates(): LiveTunnel[] {
          return labels ? registry.labeledMatching(edge.accountId, labels) : [];
        },
        pick() {
          const tunnels = this.candidates;
          if (tunnels.length === 0) return undefined;
          const turn = ((turns.get(edge.edgeId) ?? -1) + 1) % tunnels.length;
          if (turns.size > 10_000) turns.clear();
          turns.set(edge.edgeId, turn);
          return tunnels[turn];
        },
      },
    };
  }
}
