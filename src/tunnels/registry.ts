import type { SecureContext } from 'node:tls';
import type { PolicyEndpoint } from '../domain/policy/index.js';
import { publicUrl } from '../domain/tunnels/binds.js';
import type { ConnectionPolicy } from '../domain/tunnels/connection-policy.js';
import { labelNames } from '../domain/tunnels/moving-names.js';
import { RouteWaits } from '../domain/tunnels/route-waits.js';
import type { AgentConnection } from './protocol/index.js';
import type { EndpointPool, LiveTunnel, TunnelChoice } from './endpoint-pool.js';

export { EndpointPool, onlyTunnel, type LiveTunnel, type RemoteHolder, type TunnelChoice } from './endpoint-pool.js';

/*
 * The routing table and the seams of the public path, named so that the path can be followed
 * from imports: a public connection is routed by `HostRoutes` (or a TLS edge's `EdgeResolver`) to
 * a `TunnelChoice`, whose tunnel's agent is reached through `AgentConnections`.
 */

/** The agent connection of a session held here (agents/agent-sessions.ts): how a proxy stream reaches an agent. */
export interface AgentConnections {
  connectionOf(sessionId: string): AgentConnection | undefined;
}

/** Where a TLS edge's hostport sends its connections (TLS passed through), and its policy. */
export interface EdgeRoute {
  readonly edgeId: string;
  /** Its backend's live labeled tunnels, read anew at each use (a connection may wait for one). */
  readonly backend: TunnelChoice;
  /** What a withdrawal of a tunnel its backend matched is remembered by (`labelNames`); none without a backend. */
  readonly backendNames: readonly string[];
  readonly policy: ConnectionPolicy;
  readonly endpoint: PolicyEndpoint;
  /** Set when the edge's tls_termination module terminates at the edge: the backend gets plaintext. */
  readonly termination: TlsTermination | null;
}

/** Burrow terminates TLS (with the certificate served for the name) before the agent sees the bytes. */
export interface TlsTermination {
  /** The lowest TLS version accepted (`1.0`…`1.3`); null: Node's default. */
  readonly minVersion: string | null;
  /** The highest (`1.2`, `1.3`); absent: any. */
  readonly maxVersion?: string;
  /** Client certificates (terminate-tls's mutual TLS): PEM CAs, and how strictly they are asked for. */
  readonly mutualTls?: { readonly cas: readonly string[]; readonly strategy: 'require-and-verify' | 'require-any' | 'request' };
  /** The bind's MutualTLSCA / MutualTLSAtEdge: a client certificate from one of these, whatever the policy says. */
  readonly clientCas?: readonly string[];
  /** The bind's TLSTermination certificate; absent: the one served for the name. */
  readonly secureContext?: SecureContext;
}

/** The TLS edge whose hostport host is an SNI name (edges/edge-routing.ts), asked by the TLS port. */
export interface EdgeResolver {
  resolveEdge(sni: string): Promise<EdgeRoute | undefined>;
}

/** Which pool serves a public host name on one scheme: how the HTTP proxies and the TLS port route. */
export interface HostRoutes {
  /** The URL of the endpoint named `host` on this scheme (what withdrawals are remembered by). */
  urlOf(host: string): string;
  /** The name's own endpoint. */
  exact(host: string): EndpointPool | undefined;
  /** The most specific wildcard endpoint covering the name. */
  wildcard(host: string): EndpointPool | undefined;
  /** The name's own endpoint, else a wildcard one covering it. */
  poolFor(host: string): EndpointPool | undefined;
}

/**
 * What opens and closes the public TCP port of a TCP endpoint (src/tunnels/public/). Called by
 * the claims (agents/live-binds.ts) when this instance starts and stops serving a port.
 */
export interface TcpPortHooks {
  /** Starts listening on the port; rejects with an AgentRefusal when it cannot (in use). */
  open(port: number): Promise<void>;
  close(port: number): void;
}

/**
 * This instance's routing table: which pool serves a URL, and which labeled tunnels are live.
 * Only this instance's agents appear here; the database holds every instance's for the API.
 */
export class TunnelRegistry {
  private readonly pools = new Map<string, EndpointPool>();
  /** Pools of other instances' endpoints (cluster/remote-tunnels.ts): routed to, never bound into. */
  private readonly remotePools = new Map<string, EndpointPool>();
  private readonly labeled = new Map<string, LiveTunnel>();
  /** Without public listeners (unit tests, an API-only build) ports are claimed but not opened. */
  tcpPorts: TcpPortHooks = { open: async () => {}, close: () => {} };
  /** Called with the URL of each pool that opens (its first tunnel): ACME orders its name. */
  poolOpened: (url: string) => void = () => {};

  constructor(
    /** Public connections waiting for their name's route to appear (an agent moving between instances). */
    readonly waits = new RouteWaits(),
  ) {}

  /** A tunnel was added here or another instance's was routed: the waiting connections look again. */
  routesChanged(): void {
    this.waits.wake();
  }

  /** Live wildcard endpoints: with none, a name no endpoint serves costs one lookup, not a walk. */
  private wildcardPools = 0;

  /** This instance's pool of `url` (what binds join). */
  pool(url: string): EndpointPool | undefined {
    return this.pools.get(url);
  }

  /** Set when this instance drains: its agents are moving to other instances. */
  draining = false;

  /**
   * Where a public connection to `url` goes: this instance's pool (whose picks span its partner,
   * the other instances' tunnels of a pooled URL), else another instance's; while draining,
   * another instance's first (where the agents moved, answering what still comes here).
   */
  route(url: string): EndpointPool | undefined {
    if (this.draining) return this.remotePools.get(url) ?? this.pools.get(url);
    return this.pools.get(url) ?? this.remotePools.get(url);
  }

  remotePool(url: string): EndpointPool | undefined {
    return this.remotePools.get(url);
  }

  addRemotePool(pool: EndpointPool): void {
    if (isWildcardUrl(pool.url) && !this.remotePools.has(pool.url)) this.wildcardPools++;
    this.remotePools.set(pool.url, pool);
    this.link(pool.url);
  }

  /** Partners the local and remote pools of `url` when both pool (one endpoint served from several instances). */
  private link(url: string): void {
    const local = this.pools.get(url);
    if (!local) return;
    const remote = this.remotePools.get(url);
    local.partner = remote && local.poolingEnabled && remote.poolingEnabled ? remote : undefined;
  }

  /** Removes a remote tunnel; returns its pool when that was the last tunnel in it (now removed too). */
  removeRemote(url: string, tunnelId: string): EndpointPool | undefined {
    const pool = this.remotePools.get(url);
    pool?.remove(tunnelId);
    if (!pool || pool.tunnels.length > 0) return undefined;
    this.remotePools.delete(url);
    if (isWildcardUrl(url)) this.wildcardPools--;
    this.link(url);
    this.waits.moving.withdrawn(url);
    return pool;
  }

  /**
   * The most specific live wildcard endpoint covering `host`, `urls` making each candidate's URL:
   * for `a.b.example.com`, `*.b.example.com` then `*.example.com` (never `*.com`: a wildcard
   * covers a domain of two labels or more). Asked after the name's own endpoint.
   */
  wildcardPool(host: string, urls: { urlOf(hostname: string): string }): EndpointPool | undefined {
    if (this.wildcardPools === 0) return undefined;
    for (let dot = host.indexOf('.'); dot !== -1 && host.indexOf('.', dot + 1) !== -1; dot = host.indexOf('.', dot + 1)) {
      const pool = this.route(urls.urlOf(`*${host.slice(dot)}`));
      if (pool) return pool;
    }
    return undefined;
  }

  addPool(pool: EndpointPool): void {
    const opened = !this.pools.has(pool.url);
    if (opened && isWildcardUrl(pool.url)) this.wildcardPools++;
    this.pools.set(pool.url, pool);
    this.link(pool.url);
    if (opened) this.poolOpened(pool.url);
  }

  /** Removes a tunnel; returns its pool when that was the last tunnel in it (now removed too). */
  removeFromPool(url: string, tunnelId: string): EndpointPool | undefined {
    this.pools.get(url)?.remove(tunnelId);
    return this.removeIfEmpty(url);
  }

  /** Removes the pool of `url` when it holds no tunnel (a bind that opened it failed), and returns it. */
  removeIfEmpty(url: string): EndpointPool | undefined {
    const pool = this.pools.get(url);
    if (!pool || pool.tunnels.length > 0) return undefined;
    this.pools.delete(url);
    pool.partner = undefined;
    if (isWildcardUrl(url)) this.wildcardPools--;
    this.waits.moving.withdrawn(url);
    return pool;
  }

  addLabeled(tunnel: LiveTunnel): void {
    this.labeled.set(tunnel.id, tunnel);
  }

  removeLabeled(tunnelId: string): void {
    const tunnel = this.labeled.get(tunnelId);
    if (!tunnel) return;
    this.labeled.delete(tunnelId);
    // a TLS edge whose backend matched it waits for it, as a withdrawn URL does (moving-names.ts)
    for (const name of labelNames(tunnel.accountId, tunnel.labels ?? {})) this.waits.moving.withdrawn(name);
  }

  /** Labeled tunnels of an account whose labels include every one of `labels`. */
  labeledMatching(accountId: string, labels: Readonly<Record<string, string>>): LiveTunnel[] {
    const wanted = Object.entries(labels);
    return [...this.labeled.values()].filter(
      (tunnel) => tunnel.accountId === accountId && wanted.every(([key, value]) => tunnel.labels?.[key] === value),
    );
  }

  get poolCount(): number {
    return this.pools.size;
  }
}

/** The routes of one scheme's endpoints, whose URLs carry `port` (the scheme's default left out). */
export class SchemeRoutes implements HostRoutes {
  constructor(
    private readonly registry: TunnelRegistry,
    private readonly scheme: 'http' | 'https' | 'tls',
    private readonly port: number | undefined,
  ) {}

  urlOf(host: string): string {
    return publicUrl(this.scheme, host, this.port);
  }

  exact(host: string): EndpointPool | undefined {
    return this.registry.route(this.urlOf(host));
  }

  wildcard(host: string): EndpointPool | undefined {
    return this.registry.wildcardPool(host, this);
  }

  poolFor(host: string): EndpointPool | undefined {
    return this.exact(host) ?? this.wildcard(host);
  }
}

function isWildcardUrl(url: string): boolean {
  return url.includes('://*.');
}
