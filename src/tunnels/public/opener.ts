// Opening the proxy stream that carries one public connection to an agent (AGENT-PROTOCOL.md §6).
import type { ProtocolStream } from '../protocol/index.js';
import type { EdgeTypeString } from '../protocol/messages.js';
import type { AgentConnections, EndpointPool, LiveTunnel, TunnelChoice } from '../registry.js';
import { formatAddress, proxyProtocolHeader, type Address } from './proxy-proto.js';

/** At most this many proxy streams open to one agent session; beyond, new connections are refused. */
export const MAX_PROXY_STREAMS_PER_AGENT = 500;

export type { TunnelChoice } from '../registry.js';

/** What the header says about the connection, beside the tunnel id. */
export interface StreamKind {
  readonly proto: 'tcp' | 'tls' | 'http' | 'https';
  readonly edgeType: EdgeTypeString;
  readonly passthroughTls: boolean;
}

/** The header fields per kind of endpoint (the SDKs read Proto; edge types as ngrok's edges). */
export const KINDS = {
  tcp: { proto: 'tcp', edgeType: '1', passthroughTls: false },
  tls: { proto: 'tls', edgeType: '2', passthroughTls: true },
  /** A TLS edge or endpoint whose TLS burrow terminated: the agent gets the plaintext. */
  tlsTerminated: { proto: 'tls', edgeType: '2', passthroughTls: false },
  // http and https endpoints are both HTTPS-edge traffic at ngrok (EdgeType 3); the agent gets
  // plain HTTP either way, Proto tells it which scheme the client used.
  https: { proto: 'https', edgeType: '3', passthroughTls: false },
  http: { proto: 'http', edgeType: '3', passthroughTls: false },
} as const satisfies Record<string, StreamKind>;

/** Carries a connection to a tunnel held by another instance (cluster/forwarding.ts); undefined when it cannot now. */
export interface RemoteOpener {
  open(tunnel: LiveTunnel, kind: StreamKind, client: Address, server: Address | undefined): ProtocolStream | undefined;
}

export interface OpenedStream {
  readonly tunnel: LiveTunnel;
  readonly stream: ProtocolStream;
}

export class ProxyOpener {
  constructor(
    private readonly agents: AgentConnections,
    private readonly maxStreams = MAX_PROXY_STREAMS_PER_AGENT,
    /** Without it (one instance), another instance's tunnel is never picked. */
    private readonly remote?: RemoteOpener,
  ) {}

  /**
   * Whether `open` could find a tunnel for the choice now: one held by another instance, or one
   * here whose agent is connected and not going away. A connection finding none waits for one.
   */
  canOpen(choice: TunnelChoice): boolean {
    return choice.candidates.some((tunnel) => {
      if (tunnel.remote) return this.remote !== undefined;
      const connection = this.agents.connectionOf(tunnel.sessionId);
      return connection !== undefined && !connection.closed && !connection.draining && connection.authenticated;
    });
  }

  /**
   * The tunnel a connection (or an HTTP request) to `pool` goes to, picked before its policy runs
   * when the pool's tunnels run different ones (then that tunnel's policy runs, and its stream
   * opens to it alone: `onlyTunnel`); undefined when they all run one, whose tunnel is picked at
   * `open` as ever.
   * Round-robin over the tunnels that could take a stream now (when none could, the next one,
   * whose policy then runs before its stream fails to open).
   */
  pickFirst(pool: EndpointPool): LiveTunnel | undefined {
    if (pool.mix === 'same') return undefined;
    return this.pickUsable(pool) ?? pool.pick();
  }

  /** The next tunnel (round-robin) whose agent could take a stream now. */
  private pickUsable(choice: TunnelChoice): LiveTunnel | undefined {
    const tries = choice.candidates.length;
    for (let i = 0; i < tries; i++) {
      const tunnel = choice.pick();
      if (!tunnel) return undefined;
      if (tunnel.remote ? this.remote !== undefined : this.canTake(tunnel)) return tunnel;
    }
    return undefined;
  }

  private canTake(tunnel: LiveTunnel): boolean {
    const connection = this.agents.connectionOf(tunnel.sessionId);
    return connection !== undefined && !connection.closed && !connection.draining && connection.authenticated && connection.proxyStreamsOpen < this.maxStreams;
  }

  /**
   * Picks the next tunnel (round-robin) whose agent can take one more stream and opens a proxy
   * stream to it, with a PROXY header first when the bind asked for one. Undefined when no
   * tunnel can take it (none live, every agent at its cap or going away).
   */
  open(choice: TunnelChoice, kind: StreamKind, socket: SocketEnds): OpenedStream | undefined {
    const client = clientOf(socket);
    const tries = choice.candidates.length;
    for (let i = 0; i < tries; i++) {
      const tunnel = choice.pick();
      if (!tunnel) return undefined;
      if (tunnel.remote) {
        // the holder writes the PROXY header: it is told the local address only when one is asked
        const stream = this.remote?.open(tunnel, kind, client, tunnel.proxyProto === 0 ? undefined : serverOf(socket));
        if (stream) return { tunnel, stream };
        continue;
      }
      const connection = this.agents.connectionOf(tunnel.sessionId);
      if (!connection || connection.closed || !connection.authenticated || connection.proxyStreamsOpen >= this.maxStreams) continue;
      let stream: ProtocolStream;
      try {
        // a TCP client usually writes at once: its first bytes can share the header's TLS record
        stream = connection.openProxy({ id: tunnel.id, clientAddr: formatAddress(client), ...kind }, kind.proto === 'tcp');
      } catch {
        continue; // the session is going away (GOAWAY sent): try another tunnel
      }
      // the local address costs a getsockname(): asked only for a PROXY header
      if (tunnel.proxyProto === 1 || tunnel.proxyProto === 2) stream.write(proxyProtocolHeader(tunnel.proxyProto, client, serverOf(socket)));
      return { tunnel, stream };
    }
    return undefined;
  }
}

/** What the opener reads of the public socket: its two ends. */
export interface SocketEnds {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
}

function clientOf(socket: SocketEnds): Address {
  return { ip: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
}

function serverOf(socket: SocketEnds): Address {
  return { ip: socket.localAddress ?? '', port: socket.localPort ?? 0 };
}
