import type { Socket } from 'node:net';
import tls from 'node:tls';
import type { AgentSessions } from './agent-sessions.js';
import type { TlsFailureLog } from './tls-failures.js';

const MIN_VERSION = 'TLSv1.2';

export interface AgentListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly cert: string;
  readonly key: string;
}

/**
 * The TLS port agents dial (TUNNELS.md §1). muxado runs directly inside TLS; neither client
 * family offers ALPN. A handshake that does not finish within 10 s is dropped.
 */
export class AgentListener {
  readonly name = 'agents';
  private readonly server: tls.Server;
  private readonly sockets = new Set<tls.TLSSocket>();

  constructor(
    private readonly options: AgentListenerOptions,
    private readonly sessions: AgentSessions,
    private readonly tlsFailures?: TlsFailureLog,
  ) {
    this.server = tls.createServer({ cert: options.cert, key: options.key, handshakeTimeout: 10_000, minVersion: MIN_VERSION }, (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      this.sessions.accept(socket);
    });
    // Read while the TCP handle is open: the socket keeps the peer's address for the log line below.
    this.server.on('connection', (tcp: Socket) => void tcp.remoteAddress);
    // A failed handshake is the client's problem, never the process's; but the operator is told.
    this.server.on('tlsClientError', (error, socket) => {
      // the TLS socket has let go of its handle by now: the address is the TCP socket's under it
      const tcp = (socket as { _parent?: { remoteAddress?: string; remotePort?: number } })._parent ?? socket;
      this.tlsFailures?.record(error, formatClient(tcp.remoteAddress, tcp.remotePort));
      socket.destroy();
    });
  }

  /** A renewed certificate, for connections from now on (those open keep theirs). */
  replaceCertificate(cert: string, key: string): void {
    this.server.setSecureContext({ cert, key, minVersion: MIN_VERSION });
  }

  listen(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        resolve(typeof address === 'object' && address ? `tls://${address.address}:${address.port}` : String(address));
      });
    });
  }

  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  /** Phase 1: stop accepting; every session gets GOAWAY once its proxy streams are done (agents reconnect elsewhere). */
  beginShutdown(): void {
    this.server.close();
    this.sessions.beginShutdown();
  }

  /**
   * Phase 2: the public connections in flight have the grace period to finish (their sessions
   * close as they do), then every session left gets GOAWAY; the agents have up to 2 s more to
   * leave on their own before what is left is cut.
   */
  async close(graceMs: number): Promise<void> {
    this.server.close();
    await waitUntil(() => this.sessions.openCount === 0, Date.now() + graceMs);
    await this.sessions.closeAll('shutdown');
    await waitUntil(() => this.sockets.size === 0, Date.now() + Math.min(graceMs, 2_000));
    for (const socket of this.sockets) socket.destroy();
  }
}

function formatClient(ip: string | undefined, port: number | undefined): string {
  if (ip === undefined) return '';
  return `${ip.includes(':') ? `[${ip}]` : ip}:${port ?? 0}`;
}

async function waitUntil(done: () => boolean, deadline: number): Promise<void> {
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}
