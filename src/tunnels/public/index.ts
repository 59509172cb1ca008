// The public side of the data plane: the HTTP port, the TLS port and the TCP endpoints' ports,
// each public connection carried to an agent over a proxy stream.
import type net from 'node:net';
import { createServer, type Server } from 'node:net';
import { publicUrl, type EdgeSettings } from '../../domain/tunnels/binds.js';
import type { Logger } from '../../observability/logger.js';
import { SchemeRoutes, onlyTunnel, type AgentConnections, type EdgeResolver, type TunnelRegistry } from '../registry.js';
import { ConnectionSink, type ConnectionMetrics } from './connections.js';
import type { EdgeCertificates } from './edge-certificates.js';
import { HttpProxy } from './http-proxy.js';
import { KINDS, MAX_PROXY_STREAMS_PER_AGENT, ProxyOpener, type RemoteOpener } from './opener.js';
import { noDelayFromSecondWrite, SOCKET_BUFFER, splice } from './splice.js';
import { ProxyHeaderGate } from './proxy-header.js';
import { PolicyGate, endpointOfPool, type PolicyMetrics } from './policy-gate.js';
import { HttpPolicy } from './http-policy.js';
import { EdgeLogins } from './edge-logins.js';
import { TcpEndpoints } from './tcp-endpoints.js';
import { TcpConnectionLimits, type TcpLimits } from './tcp-limits.js';
import { TlsPort } from './tls-port.js';
import { routeOrWait } from './route-or-wait.js';
import type { InspectionSink } from './capture.js';
import type { AcmeChallenges } from './acme-challenges.js';

export type { EdgeRoute } from '../registry.js';
export { MAX_PROXY_STREAMS_PER_AGENT } from './opener.js';

/** Same shape as app/listeners.ts `Listener` (tunnels/ does not import app/). */
export interface PublicListener {
  readonly name: string;
  listen(): Promise<string>;
  beginShutdown(): void;
  close(graceMs: number): Promise<void>;
}

export interface PublicTrafficOptions {
  readonly host: string;
  readonly httpPort: number;
  readonly tlsPort: number;
  readonly edge: EdgeSettings;
  readonly registry: TunnelRegistry;
  readonly agents: AgentConnections;
  /** The edge certificate (EDGE_TLS_CERT/KEY or issued from the CA); needed with a TLS port. */
  readonly edgeCertificates: EdgeCertificates | undefined;
  /** TLS edges by their hostport host; none without edges. */
  readonly edges?: EdgeResolver;
  readonly logger: Logger;
  readonly metrics?: ConnectionMetrics & PolicyMetrics;
  /** With ACME on: the challenges the HTTP and TLS ports answer. */
  readonly acme?: AcmeChallenges | undefined;
  /** Per-client share and idle timeout of TCP endpoints' connections (busy from half an agent's streams). */
  readonly tcpLimits: Omit<TcpLimits, 'busyAt'>;
  /** PROXY_PROTOCOL_FROM: connections from these CIDRs start with a PROXY v1/v2 header. */
  readonly proxyProtocolFrom?: readonly string[];
  /** The traffic inspector of HTTP(S) endpoints; none: nothing captured. */
  readonly inspection?: InspectionSink | undefined;
  /** Forwarding to tunnels held by other instances (cluster/); none with one instance. */
  readonly remote?: RemoteOpener | undefined;
  /** TLS_DIR's sealing secret, whose derived key seals edge login cookies (IDENTITY.md §1). */
  readonly loginSecret?: Uint8Array | undefined;
}

/** Builds the public listeners and installs the TCP port hooks into the registry. */
export function createPublicTraffic(options: PublicTrafficOptions): PublicListener[] {
  const { registry, edge } = options;
  const sink = new ConnectionSink(options.logger, options.metrics);
  const gate = new PolicyGate(edge.region, options.metrics);
  const logins = options.loginSecret ? new EdgeLogins(options.loginSecret, options.logger) : undefined;
  const httpPolicy = new HttpPolicy(edge.region, options.metrics, logins?.codec);
  const opener = new ProxyOpener(options.agents, MAX_PROXY_STREAMS_PER_AGENT, options.remote);
  // in a cluster an endpoint is briefly unrouted while its agent moves: its requests wait for it
  const waits = options.remote ? registry.waits : undefined;
  const tcpLimits = new TcpConnectionLimits({ ...options.tcpLimits, busyAt: MAX_PROXY_STREAMS_PER_AGENT / 2 });
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  const proxyHeaders = options.proxyProtocolFrom?.length ? new ProxyHeaderGate(options.proxyProtocolFrom) : undefined;
  const tcp = new TcpEndpoints(options.host, edge.publicHost, (socket, port, server) => {
    track(socket);
    if (proxyHeaders) proxyHeaders.accept(socket, () => void carryTcp(socket, port, server));
    else void carryTcp(socket, port, server);
  });
  const carryTcp = async (socket: net.Socket, port: number, server: net.Server) => {
    socket.on('error', () => {});
    const conn = sink.open('tcp', socket, server);
    const url = publicUrl('tcp', edge.publicHost, port);
    let pool = routeOrWait(waits, opener, () => registry.route(url), (moving) => moving.mayMove([url]));
    if (pool instanceof Promise) {
      pool = await pool;
      if (socket.destroyed) return;
    }
    if (pool) conn.endpointId = pool.endpointId;
    // a pool whose tunnels run different policies: the tunnel first, then its policy (opener.ts)
    const first = pool && opener.pickFirst(pool);
    if (pool && (!gate.admit(conn, first?.policy ?? pool.policy, endpointOfPool(pool)) || !tcpLimits.admit(conn, pool.endpointId))) {
      socket.destroy();
      return;
    }
    const opened = pool ? opener.open(first ? onlyTunnel(first) : pool, KINDS.tcp, socket) : undefined;
    if (!opened) {
      conn.outcome = pool ? 'no_tunnel' : 'no_endpoint';
      socket.destroy();
      return;
    }
    conn.verdict = 'allowed';
    conn.tunnelId = opened.tunnel.id;
    noDelayFromSecondWrite(socket, opened.stream);
    splice(socket, opened.stream, () => {});
  };
  registry.tcpPorts = tcp;

  const listeners: PublicListener[] = [
    {
      name: 'edge-tcp',
      listen: async () => `tcp://${options.host}:${edge.tcpPorts.map((r) => (r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`)).join(',')}`,
      beginShutdown: () => tcp.closeAll(),
      close: (graceMs) => drain(sockets, graceMs),
    },
  ];

  if (options.httpPort > 0) {
    const proxy = new HttpProxy({
      scheme: 'http',
      routes: new SchemeRoutes(registry, 'http', edge.httpPort),
      opener,
      waits,
      gate,
      sink,
      acme: options.acme,
      httpPolicy,
      logins,
      inspection: options.inspection,
    });
    proxy.server.on('connection', track);
    const front = proxyHeaders ? headerReadingFront(proxy.server, proxyHeaders) : proxy.server;
    if (front !== proxy.server) front.on('connection', track); // waiting for its header, it is one to drain too
    listeners.push(serverListener('edge-http', front, options.host, options.httpPort, 'http', sockets, () => proxy.server.closeIdleConnections()));
  }

  if (options.tlsPort > 0) {
    if (!options.edgeCertificates) throw new Error('the TLS port needs the edge certificate');
    const httpsRoutes = new SchemeRoutes(registry, 'https', edge.tlsPort);
    const https = new HttpProxy({
      scheme: 'https',
      routes: httpsRoutes,
      opener,
      waits,
      gate,
      sink,
      httpPolicy,
      logins,
      inspection: options.inspection,
    });
    const port = new TlsPort({
      routes: { tls: new SchemeRoutes(registry, 'tls', edge.tlsPort), https: httpsRoutes },
      edges: options.edges,
      opener,
      waits,
      gate,
      sink,
      certificates: options.edgeCertificates,
      https,
      acme: options.acme,
      passthroughLimits: tcpLimits,
      proxyHeaders,
    });
    handedSockets(https.server); // the TLS port hands it the terminated connections
    port.server.on('connection', track);
    listeners.push(serverListener('edge-tls', port.server, options.host, options.tlsPort, 'tls', sockets, () => https.server.closeIdleConnections()));
  }
  return listeners;
}

/** The HTTP port when PROXY headers are read: a plain listener that reads one, then hands the socket to node:http. */
function headerReadingFront(server: Server, proxyHeaders: ProxyHeaderGate): Server {
  handedSockets(server);
  // node:http's own listener options: half-open kept (the proxy ends it), Nagle off
  return createServer({ allowHalfOpen: true, noDelay: true, pauseOnConnect: true, highWaterMark: SOCKET_BUFFER }, (socket) =>
    proxyHeaders.accept(socket, () => {
      server.emit('connection', socket);
      socket.resume(); // what followed the header was put back; node:http reads it first
    }),
  );
}

/**
 * node:http enforces headersTimeout only on a server that emitted 'listening' (it starts its
 * connection checks then); one that is handed its sockets (emit('connection')) never does.
 */
function handedSockets(server: Server): void {
  server.emit('listening');
}

function serverListener(name: string, server: Server, host: string, port: number, scheme: string, sockets: Set<net.Socket>, closeIdle: () => void): PublicListener {
  return {
    name,
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address();
          resolve(typeof address === 'object' && address ? `${scheme}://${address.address}:${address.port}` : String(address));
        });
      }),
    beginShutdown: () => {
      server.close();
      closeIdle(); // idle keep-alive connections go now; busy ones after their answer
    },
    close: async (graceMs) => {
      server.close();
      await drain(sockets, graceMs);
    },
  };
}

/** Lets the public connections end on their own within the grace period, then cuts the rest. */
async function drain(sockets: Set<net.Socket>, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  for (const socket of sockets) socket.destroy();
}
