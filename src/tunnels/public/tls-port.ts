// EDGE_TLS_PORT: reads the ClientHello and routes by SNI (TUNNELS.md §4): a TLS endpoint gets the
// bytes unchanged, an HTTPS endpoint is terminated here and proxied as HTTP, a TLS edge's
// hostport goes to its backend; anything else gets unrecognized_name.
import net from 'node:net';
import tls from 'node:tls';
import { onlyTunnel, type EdgeResolver, type EdgeRoute, type HostRoutes, type TlsTermination, type TunnelChoice } from '../registry.js';
import { readClientHello, unrecognizedNameAlert } from '../tls/client-hello.js';
import { clientCertificateAccepted } from '../tls/client-certificates.js';
import { handshakeTls, helloTls } from '../tls/connection-tls.js';
import type { AgentCertificate, EdgeTlsOption } from '../../domain/tunnels/edge-tls.js';
import type { ConnectionSink, PublicConnection } from './connections.js';
import type { EdgeCertificates } from './edge-certificates.js';
import type { AdmittedEndpoint as Admitted, HttpProxy } from './http-proxy.js';
import { KINDS, type ProxyOpener } from './opener.js';
import { noDelayFromSecondWrite, SOCKET_BUFFER, splice } from './splice.js';
import { endpointOfPool, type PolicyGate } from './policy-gate.js';
import { ACME_TLS_ALPN, answerAlpnChallenge, type AcmeChallenges } from './acme-challenges.js';
import type { TcpConnectionLimits } from './tcp-limits.js';
import type { ProxyHeaderGate } from './proxy-header.js';
import type { RouteWaits } from '../../domain/tunnels/route-waits.js';
import { namesServing } from '../../domain/tunnels/moving-names.js';
import { backendOrWait, routeOrWait } from './route-or-wait.js';

const HANDSHAKE_TIMEOUT_MS = 10_000;

export type { EdgeRoute } from '../registry.js';

export interface TlsPortOptions {
  /** The `tls://` and `https://` endpoints, by SNI host. */
  readonly routes: { readonly tls: HostRoutes; readonly https: HostRoutes };
  /** TLS edges by their hostport host; none without edges. */
  readonly edges: EdgeResolver | undefined;
  readonly opener: ProxyOpener;
  /** Set in a cluster: a name no route serves waits briefly for its endpoint (an agent moving). */
  readonly waits?: RouteWaits | undefined;
  readonly gate: PolicyGate;
  readonly sink: ConnectionSink;
  readonly certificates: EdgeCertificates;
  readonly https: HttpProxy;
  /** Per-client share and idle timeout of passed-through connections (tls endpoints, TLS edges), as for TCP endpoints. */
  readonly passthroughLimits?: TcpConnectionLimits;
  readonly clientHelloTimeoutMs?: number;
  /** PROXY_PROTOCOL_FROM: the header read first from the balancer's connections. */
  readonly proxyHeaders?: ProxyHeaderGate | undefined;
  /** With ACME on: tls-alpn-01 validations are answered before any routing. */
  readonly acme?: AcmeChallenges | undefined;
}

export class TlsPort {
  readonly server: net.Server;

  constructor(private readonly options: TlsPortOptions) {
    this.server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true, highWaterMark: SOCKET_BUFFER }, (socket) => {
      const gate = this.options.proxyHeaders;
      if (gate) gate.accept(socket, () => void this.accept(socket));
      else void this.accept(socket);
    });
  }

  private async accept(socket: net.Socket): Promise<void> {
    socket.on('error', () => {});
    const conn = this.options.sink.open('tls', socket, this.server);
    const hello = await readClientHello(socket, { timeoutMs: this.options.clientHelloTimeoutMs });
    if (hello.status !== 'done') {
      conn.outcome = hello.code;
      // a name that can match nothing (an IPv6 literal, a trailing dot) is answered as no match is
      if (hello.code === 'invalid_sni') return this.unrecognized(socket);
      socket.destroy();
      return;
    }
    const sni = hello.sni;
    if (sni !== undefined) conn.useTls(() => helloTls(sni));
    if (this.options.acme && sni !== undefined && hello.alpn.includes(ACME_TLS_ALPN)) return answerAlpnChallenge(this.options.acme, socket, hello.buffered, sni, conn);
    // The name's own endpoint, then a TLS edge's hostport, then a wildcard endpoint covering it.
    if (sni !== undefined && (await this.toEndpoint(socket, hello.buffered, conn, sni, false))) return;
    let edge: EdgeRoute | undefined;
    try {
      edge = sni === undefined ? undefined : await this.options.edges?.resolveEdge(sni);
    } catch {
      conn.outcome = 'edge_lookup_failed';
      return void socket.destroy();
    }
    if (edge) {
      conn.edgeId = edge.edgeId;
      if (!this.options.gate.admit(conn, edge.policy, edge.endpoint) || !this.withinLimits(conn, edge.edgeId)) return void socket.destroy();
      // a backend with no tunnel to take it waits as an endpoint does (its agent may be moving)
      await backendOrWait(this.options.waits, this.options.opener, edge);
      if (socket.destroyed) return;
      // a terminate-tls action of the edge's policy wins over its module
      const termination = conn.termination ?? edge.termination;
      if (termination) await this.terminateToTunnel(socket, hello.buffered, conn, sni!, edge.backend, termination);
      else this.passthrough(socket, hello.buffered, conn, edge.backend);
      return;
    }
    if (sni !== undefined && (await this.toEndpoint(socket, hello.buffered, conn, sni, true))) return;
    if (sni !== undefined && (await this.routeAppeared(sni)) && !socket.destroyed) {
      if ((await this.toEndpoint(socket, hello.buffered, conn, sni, false)) || (await this.toEndpoint(socket, hello.buffered, conn, sni, true))) return;
    }
    conn.outcome = 'unrecognized_name';
    this.unrecognized(socket);
  }

  /**
   * Whether an endpoint for the name appears within the wait, when its agent may be moving between
   * instances (route-or-wait.ts); a name never routed is not waited for.
   */
  private async routeAppeared(sni: string): Promise<boolean> {
    const { waits, routes } = this.options;
    if (!waits) return false;
    const names = namesServing(sni);
    if (!waits.moving.mayMove([...names.map((name) => routes.tls.urlOf(name)), ...names.map((name) => routes.https.urlOf(name))])) return false;
    return (await waits.until(() => routes.tls.poolFor(sni) ?? routes.https.poolFor(sni))) !== undefined;
  }

  /** TUNNELS.md §4: no SNI, or none that matches → the `unrecognized_name` alert, then close. */
  private unrecognized(socket: net.Socket): void {
    socket.end(unrecognizedNameAlert());
    socket.resume(); // read (and drop) whatever follows, so the FIN is seen and the socket closes
  }

  /** Serves the connection with the tls or https endpoint the SNI names; false when there is none. */
  private async toEndpoint(socket: net.Socket, clientHello: Buffer, conn: PublicConnection, sni: string, wildcard: boolean): Promise<boolean> {
    const { routes, opener, waits } = this.options;
    const find = () => (wildcard ? routes.tls.wildcard(sni) : routes.tls.exact(sni));
    // a passed-through endpoint whose agents cannot take it now waits for one (its agent moving);
    // an https one waits per request, in the HTTP proxy
    let passthrough = find();
    if (passthrough && waits && !opener.canOpen(passthrough)) {
      passthrough = await routeOrWait(waits, opener, find, () => false);
      if (socket.destroyed) return true;
    }
    if (passthrough) {
      conn.endpointId = passthrough.endpointId;
      // a pool whose tunnels run different policies: the tunnel first, then its policy and edge TLS
      const first = opener.pickFirst(passthrough);
      const policy = first?.policy ?? passthrough.policy;
      if (!this.options.gate.admit(conn, policy, endpointOfPool(passthrough)) || !this.withinLimits(conn, passthrough.endpointId)) {
        socket.destroy();
        return true;
      }
      const choice = first ? onlyTunnel(first) : passthrough;
      // a terminate-tls action, or the bind's TLSTermination / MutualTLSAtEdge
      const termination = withEdgeTls(conn.termination, policy.edgeTls);
      if (termination) await this.terminateToTunnel(socket, clientHello, conn, sni, choice, termination);
      else this.passthrough(socket, clientHello, conn, choice);
      return true;
    }
    const terminated = wildcard ? this.options.routes.https.wildcard(sni) : this.options.routes.https.exact(sni);
    if (!terminated) return false;
    conn.proto = 'https';
    conn.endpointId = terminated.endpointId;
    // tunnels whose connection-level policies differ: the connection keeps the tunnel picked now
    const pinned = terminated.mix === 'per-connection' ? opener.pickFirst(terminated) : undefined;
    const policy = pinned?.policy ?? terminated.policy;
    // Per connection, before any request is read (TUNNELS.md §5).
    if (!this.options.gate.admit(conn, policy, endpointOfPool(terminated))) socket.destroy();
    else await this.terminate(socket, clientHello, conn, sni, { url: terminated.url, pinned }, !wildcard, withEdgeTls(conn.termination, policy.edgeTls));
    return true;
  }

  private withinLimits(conn: PublicConnection, endpointOrEdgeId: string): boolean {
    return this.options.passthroughLimits?.admit(conn, endpointOrEdgeId) ?? true;
  }

  private passthrough(socket: net.Socket, clientHello: Buffer, conn: PublicConnection, choice: TunnelChoice): void {
    const opened = this.options.opener.open(choice, KINDS.tls, socket);
    if (!opened) {
      conn.outcome = 'no_tunnel';
      socket.destroy();
      return;
    }
    conn.verdict = 'allowed';
    conn.tunnelId = opened.tunnel.id;
    opened.stream.write(clientHello);
    // the server's handshake flight often comes in several writes: none may wait on a delayed ACK
    noDelayFromSecondWrite(socket, opened.stream);
    splice(socket, opened.stream, () => {});
  }

  private async terminate(socket: net.Socket, clientHello: Buffer, conn: PublicConnection, sni: string, admitted: Admitted, ownName: boolean, termination: TlsTermination | undefined): Promise<void> {
    const secure = await this.handshake(socket, clientHello, conn, sni, ownName, { ALPNProtocols: ['http/1.1'], ...clientCertificateRequest(termination) }, termination);
    if (!secure) return;
    const serve = () => {
      this.options.https.adopt(secure, conn, admitted);
      this.options.https.server.emit('connection', secure);
    };
    if (!termination) return serve();
    // terminate-tls or MutualTLSCA on an https endpoint: versions and client certificates are
    // checked before the HTTP server gets the socket, so no request of a refused client is read
    secure.once('secure', () => (accepted(secure, conn, termination) ? serve() : secure.destroy()));
  }

  /**
   * HTTP-POLICY.md §5 (and the tls endpoints' termination): TLS ends here, with the certificate
   * served for the name, and the tunnel gets the plaintext once the handshake is done.
   */
  private async terminateToTunnel(socket: net.Socket, clientHello: Buffer, conn: PublicConnection, sni: string, choice: TunnelChoice, termination: TlsTermination): Promise<void> {
    // a name burrow serves (its own endpoint or edge hostport): an ACME certificate may be ordered for it
    const secure = await this.handshake(socket, clientHello, conn, sni, true, clientCertificateRequest(termination), termination);
    if (!secure) return;
    secure.once('secure', () => {
      if (!accepted(secure, conn, termination)) return void secure.destroy();
      const opened = this.options.opener.open(choice, KINDS.tlsTerminated, socket);
      if (!opened) {
        conn.outcome = 'no_tunnel';
        return void secure.destroy();
      }
      conn.verdict = 'allowed';
      conn.tunnelId = opened.tunnel.id;
      splice(secure, opened.stream, () => {});
    });
  }

  /** The server side of a TLS handshake over `socket`, bounded in time; undefined when no certificate. */
  private async handshake(socket: net.Socket, clientHello: Buffer, conn: PublicConnection, sni: string, ownName: boolean, options: tls.TLSSocketOptions, termination?: TlsTermination): Promise<tls.TLSSocket | undefined> {
    let secureContext: tls.SecureContext;
    try {
      secureContext = termination?.secureContext ?? (await this.options.certificates.contextFor(sni, ownName));
    } catch {
      conn.outcome = 'certificate';
      socket.destroy();
      return undefined;
    }
    if (socket.destroyed) return undefined;
    // The TLS socket reads what the raw socket has buffered first: the ClientHello goes back there.
    socket.unshift(clientHello);
    const secure = new tls.TLSSocket(socket, { ...options, isServer: true, secureContext });
    const timer = setTimeout(() => secure.destroy(), HANDSHAKE_TIMEOUT_MS);
    secure.once('secure', () => {
      clearTimeout(timer);
      conn.useTls(() => handshakeTls(secure, sni));
    });
    secure.once('close', () => {
      clearTimeout(timer);
      socket.destroy();
    });
    secure.on('error', () => secure.destroy());
    return secure;
  }
}

/** Asks for a client certificate when mutual TLS is on; verified by `accepted`, against the policy's or the bind's CAs. */
function clientCertificateRequest(termination: TlsTermination | undefined): tls.TLSSocketOptions {
  return termination?.mutualTls || termination?.clientCas ? { requestCert: true, rejectUnauthorized: false } : {};
}

const agentContexts = new WeakMap<AgentCertificate, tls.SecureContext>();

/**
 * The termination a connection gets: the policy's terminate-tls (when one ran), with the bind's
 * edge TLS options added: its CAs are required whatever the policy asks, and its certificate served.
 */
function withEdgeTls(action: TlsTermination | undefined, edgeTls: EdgeTlsOption | undefined): TlsTermination | undefined {
  if (!edgeTls) return action;
  const certificate = edgeTls.certificate;
  let secureContext: tls.SecureContext | undefined;
  if (certificate) {
    secureContext = agentContexts.get(certificate);
    if (!secureContext) agentContexts.set(certificate, (secureContext = tls.createSecureContext({ cert: certificate.cert, key: certificate.privateKey() })));
  }
  return {
    ...(action ?? { minVersion: null }),
    ...(edgeTls.clientCas ? { clientCas: edgeTls.clientCas } : {}),
    ...(secureContext ? { secureContext } : {}),
  };
}

/**
 * Node's secure contexts are shared per certificate, so the version range and the client
 * certificate are checked once the handshake is done, before any byte goes further.
 */
function accepted(secure: tls.TLSSocket, conn: PublicConnection, termination: TlsTermination): boolean {
  const protocol = secure.getProtocol();
  if (!meetsMinimum(protocol, termination.minVersion) || (termination.maxVersion !== undefined && !meetsMinimum(termination.maxVersion, protocol))) {
    conn.outcome = 'tls_version';
    return false;
  }
  const mutual = termination.mutualTls;
  if ((mutual && !clientCertificateAccepted(secure, mutual.cas, mutual.strategy)) || (termination.clientCas && !clientCertificateAccepted(secure, termination.clientCas, 'require-and-verify'))) {
    conn.outcome = 'client_certificate';
    return false;
  }
  return true;
}

const PROTOCOL_RANK: Readonly<Record<string, number>> = { TLSv1: 0, 'TLSv1.1': 1, 'TLSv1.2': 2, 'TLSv1.3': 3, '1.0': 0, '1.1': 1, '1.2': 2, '1.3': 3 };

/** Whether the negotiated protocol (`TLSv1.2`…) is at least `minimum` (`1.2`…, or null: any Node agreed to). */
function meetsMinimum(negotiated: string | null, minimum: string | null): boolean {
  if (minimum === null) return true;
  return negotiated !== null && (PROTOCOL_RANK[negotiated] ?? -1) >= (PROTOCOL_RANK[minimum] ?? 99);
}
