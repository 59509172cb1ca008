// The data plane's part of a cluster (CLUSTER.md §2): the link at CLUSTER_ADDR, forwarding both
// ways over it, and the routing cache that puts other instances' tunnels in the routing table.
import { RoutingCache, type RemoteRouteSource } from '../../domain/tunnels/routing-cache.js';
import type { Logger } from '../../observability/logger.js';
import type { CertificateAuthority } from '../tls/ca.js';
import { ProxyOpener, type RemoteOpener } from '../public/opener.js';
import type { AgentConnections, TunnelRegistry } from '../registry.js';
import { ClusterLink, linkCredentials } from './link.js';
import { ForwardedStreams, Forwarder, type HeldTunnels } from './forwarding.js';
import { RemoteTunnels } from './remote-tunnels.js';

const LINK_HEARTBEAT_MS = 1_000;

export interface ClusterSettings {
  /** CLUSTER_ADDR: where the link listens, and where the others dial (recorded in the database). */
  readonly addr: string;
  readonly routes: RemoteRouteSource;
  /** How often the routes are read again besides notifications (a missed one is found then). */
  readonly checkIntervalMs?: number;
}

export interface ClusterForwarding {
  readonly remote: RemoteOpener;
  /** Same shape as app/listeners.ts `Listener`. */
  readonly listener: { readonly name: string; listen(): Promise<string>; beginShutdown(): void; close(graceMs: number): Promise<void> };
  startBackground(): void;
  stopBackground(): void;
}

export async function clusterForwarding(options: {
  settings: ClusterSettings;
  instanceId: string;
  ca: CertificateAuthority;
  registry: TunnelRegistry;
  agents: AgentConnections & HeldTunnels;
  /** Agent sessions still open here: while any is, the link stays up (others may still forward to them). */
  agentsOpen: () => number;
  logger: Logger;
}): Promise<ClusterForwarding> {
  const { settings, registry, logger } = options;
  const served = new ForwardedStreams(options.agents, new ProxyOpener(options.agents));
  const link = new ClusterLink({
    instanceId: options.instanceId,
    credentials: await linkCredentials(options.ca),
    onStream: (stream, _peer, kind) => served.serve(stream, kind),
    // a silent link (a network cut) fails its connections within a few seconds, not ten
    heartbeatIntervalMs: LINK_HEARTBEAT_MS,
    heartbeatToleranceMs: 3 * LINK_HEARTBEAT_MS,
  });
  const forwarder = new Forwarder(link);
  const remote = new RemoteTunnels(registry, forwarder, logger);
  const cache = new RoutingCache(
    settings.routes,
    options.instanceId,
    (changes) => remote.apply(changes),
    (error) => logger.warn({ error: (error as Error).message }, 'cluster: routes not read; read again at the next check'),
    settings.checkIntervalMs,
  );
  const colon = settings.addr.lastIndexOf(':');
  const host = settings.addr.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(settings.addr.slice(colon + 1));
  return {
    remote: forwarder,
    listener: {
      name: 'cluster',
      listen: async () => `cluster://${await link.listen(port, host)}`,
      beginShutdown: () => {},
      close: async (graceMs) => {
        // connections forwarded here finish within the grace period, as public ones do (those
        // this instance forwards elsewhere are public sockets: their listeners drain them); the
        // link stays up until the agents have left, for what others forward before they see the drain
        const deadline = Date.now() + graceMs;
        while ((served.active > 0 || options.agentsOpen() > 0) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        await link.close();
      },
    },
    startBackground: () => void cache.start(),
    stopBackground: () => void cache.stop(),
  };
}
