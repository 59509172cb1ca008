// The public ports of TCP endpoints: one listener per port of EDGE_TCP_PORTS while it is bound.
import net from 'node:net';
import { agentErrors } from '../../domain/tunnels/agent-errors.js';
import type { TcpPortHooks } from '../registry.js';
import { SOCKET_BUFFER } from './splice.js';

/** Opens and closes the listeners; each accepted socket goes to `onConnection` with its port. */
export class TcpEndpoints implements TcpPortHooks {
  private readonly servers = new Map<number, net.Server>();
  private accepting = true;

  constructor(
    private readonly host: string,
    /** The host written in the refusal (EDGE_PUBLIC_HOST). */
    private readonly publicHost: string,
    private readonly onConnection: (socket: net.Socket, port: number, server: net.Server) => void,
  ) {}

  /** Listens on the port; a port this machine cannot bind (in use) is refused with 307. */
  async open(port: number): Promise<void> {
    if (this.servers.has(port)) return;
    if (!this.accepting) throw agentErrors.shuttingDown();
    // allowHalfOpen: a client's FIN ends only its direction; the answer still flows back.
    // 64 KiB socket buffers: a bulk transfer moves a TLS read's worth of records (up to four of
    // 16 KiB) per write instead of one (see splice.ts), still far under one muxado window.
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true, highWaterMark: SOCKET_BUFFER }, (socket) => this.onConnection(socket, port, server));
    this.servers.set(port, server);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host: this.host, exclusive: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      this.servers.delete(port);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') throw agentErrors.addressInUse(`${this.publicHost}:${port}`);
      throw error;
    }
    server.on('error', () => {}); // after listen, errors are per connection
  }

  /** Stops accepting on the port; connections already open carry on until they end. */
  close(port: number): void {
    const server = this.servers.get(port);
    if (!server) return;
    this.servers.delete(port);
    server.close();
  }

  get openPorts(): number[] {
    return [...this.servers.keys()];
  }

  /** Shutdown: no more ports, none listening. */
  closeAll(): void {
    this.accepting = false;
    for (const port of [...this.servers.keys()]) this.close(port);
  }
}
