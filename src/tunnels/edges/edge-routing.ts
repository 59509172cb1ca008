import type { EdgeRouteReader } from '../../domain/edges/types.js';
import { publicUrl } from '../../domain/tunnels/binds.js';
import type { Logger } from '../../observability/logger.js';
import type { EdgeRoute } from '../public/index.js';
import type { LiveTunnel, TunnelRegistry } from '../registry.js';
import { EdgeDirectory } from './edge-directory.js';

/**
 * Connections to a TLS edge's hostport (TUNNELS.md §4): the edge's policy, then its enabled
 * backend's live labeled tunnels, round-robin per edge. No backend or no live tunnel: the
 * connection is closed (the TLS port finds no tunnel to open a stream to).
 */
export function edgeRouting(reader: EdgeRouteReader, registry: TunnelRegistry, maxPolicyRules: number, logger: Logger, tlsPort: number): (sni: string) => Promise<EdgeRoute | undefined> {
  const directory = new EdgeDirectory(reader, maxPolicyRules, logger);
  const turns = new Map<string, number>();
  return async (sni) => {
    const edge = await directory.resolve(sni);
    if (!edge) return undefined;
    const tunnels: LiveTunnel[] = edge.labels ? registry.labeledMatching(edge.accountId, edge.labels) : [];
    const host = edge.hostport.slice(0, edge.hostport.lastIndexOf(':'));
    const port = Number(edge.hostport.slice(edge.hostport.lastIndexOf(':') + 1));
    return {
      edgeId: edge.edgeId,
      policy: edge.policy,
      // the URL as public URLs are written (TUNNELS.md §1): the scheme's default port left out
      endpoint: { url: publicUrl('tls', host, port), addr: edge.hostport, host, id: edge.edgeId, protocol: 'tls', port: port || tlsPort },
      backend: {
        tunnels,
        pick() {
          if (tunnels.length === 0) return undefined;
          const turn = ((turns.get(edge.edgeId) ?? -1) + 1) % tunnels.length;
          if (turns.size > 10_000) turns.clear();
          turns.set(edge.edgeId, turn);
          return tunnels[turn];
        },
      },
    };
  };
}
