// Other instances' tunnels in this instance's routing table (CLUSTER.md §2): the routing cache's
// changes become remote pools (endpoints), labeled tunnels (tunnel groups, round-robin with the
// local ones) and TCP listeners (a TCP endpoint's port is cluster-wide: every instance listens).
import type { RouteChanges, RemoteRoute } from '../../domain/tunnels/routing-cache.js';
import type { Logger } from '../../observability/logger.js';
import { EndpointPool, type LiveTunnel, type TunnelRegistry } from '../registry.js';
import { remoteTunnel, type Forwarder } from './forwarding.js';

export class RemoteTunnels {
  private readonly held = new Map<string, LiveTunnel>();

  constructor(
    private readonly registry: TunnelRegistry,
    private readonly forwarder: Pick<Forwarder, 'describe'>,
    private readonly logger: Logger,
  ) {}

  /** Applies the changes; resolves with the ids of added routes not taken (holder unreachable, tunnel gone). */
  async apply(changes: RouteChanges): Promise<string[]> {
    // a changed route (a patched policy) keeps serving as it was until its new description is in
    const readded = new Set(changes.added.map((route) => route.tunnelId));
    for (const route of changes.removed) if (!readded.has(route.tunnelId)) this.remove(route.tunnelId);
    const described = await Promise.all(changes.added.map((route) => this.describe(route)));
    const missed: string[] = [];
    changes.added.forEach((route, index) => {
      const tunnel = described[index];
      if (tunnel) this.add(route, tunnel);
      else {
        this.remove(route.tunnelId);
        missed.push(route.tunnelId);
      }
    });
    if (changes.added.length > missed.length) this.registry.routesChanged();
    return missed;
  }

  get size(): number {
    return this.held.size;
  }

  private async describe(route: RemoteRoute): Promise<LiveTunnel | undefined> {
    const holder = { instanceId: route.instanceId, clusterAddr: route.clusterAddr };
    try {
      const description = await this.forwarder.describe(holder, route.tunnelId, route.sessionId);
      return description && remoteTunnel(route, holder, description);
    } catch (error) {
      this.logger.warn({ instance: route.instanceId, cluster_addr: route.clusterAddr, tunnel_id: route.tunnelId, error: (error as Error).message }, 'cluster: cannot reach the instance holding a tunnel; retried at the next check');
      return undefined;
    }
  }

  private add(route: RemoteRoute, tunnel: LiveTunnel): void {
    if (this.replace(tunnel)) return;
    this.remove(tunnel.id); // a route that moved (another URL) goes, then joins as new
    this.held.set(tunnel.id, tunnel);
    if (tunnel.url === null) return this.registry.addLabeled(tunnel);
    let pool = this.registry.remotePool(tunnel.url);
    if (!pool) {
      pool = new EndpointPool(tunnel.url, route.endpointId ?? '', route.poolingEnabled);
      this.registry.addRemotePool(pool);
      const port = tcpPortOf(tunnel.url);
      if (port !== undefined) this.registry.tcpPorts.open(port).catch((error: Error) => this.logger.warn({ port, error: error.message }, 'cluster: cannot listen on the port of a TCP endpoint held by another instance'));
    }
    pool.add(tunnel);
  }

  /** A described again tunnel of the same URL takes the old one's place: its pool's order (its turn, and whose policy the endpoint shows) and a TCP port stay. */
  private replace(tunnel: LiveTunnel): boolean {
    const old = this.held.get(tunnel.id);
    if (!old || old.url !== tunnel.url) return false;
    if (tunnel.url === null) this.registry.addLabeled(tunnel);
    else {
      const pool = this.registry.remotePool(tunnel.url);
      if (!pool?.replace(old, tunnel)) return false;
    }
    this.held.set(tunnel.id, tunnel);
    return true;
  }

  private remove(tunnelId: string): void {
    const tunnel = this.held.get(tunnelId);
    if (!tunnel) return;
    this.held.delete(tunnelId);
    if (tunnel.url === null) return this.registry.removeLabeled(tunnelId);
    const emptied = this.registry.removeRemote(tunnel.url, tunnelId);
    if (!emptied) return;
    const port = tcpPortOf(emptied.url);
    // a port a local bind holds stays open
    if (port !== undefined && !this.registry.pool(emptied.url)) this.registry.tcpPorts.close(port);
  }
}

function tcpPortOf(url: string): number | undefined {
  if (!url.startsWith('tcp://')) return undefined;
  const port = Number(url.slice(url.lastIndexOf(':') + 1));
  return Number.isInteger(port) ? port : undefined;
}
