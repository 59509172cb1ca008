// Public connections carried between instances (CLUSTER.md §2). The accepting instance has run
// the policy and written the connection's log line; it opens a `forward` stream on the link whose
// header names the tunnel and the client, and the holding instance opens the agent's proxy stream
// (with the PROXY header the bind asked for) and splices the two: muxado windows on both hops,
// so a slow end holds back the other across the hop. A `describe` stream asks the holder for what
// the accepting side needs to run a tunnel's policy and terminate its TLS itself.
import type { MuxadoStream } from '../muxado/stream.js';
import type { ProtocolStream } from '../protocol/index.js';
import { compilePolicySource, type PolicySource } from '../../domain/tunnels/connection-policy.js';
import type { BindProto } from '../../domain/tunnels/binds.js';
import { edgeTlsOf, edgeTlsOpts } from '../../domain/tunnels/edge-tls.js';
import type { LiveTunnel, RemoteHolder } from '../registry.js';
import { KINDS, type ProxyOpener, type RemoteOpener, type StreamKind } from '../public/opener.js';
import type { Address } from '../public/proxy-proto.js';
import { splice } from '../public/splice.js';
import type { ClusterLink, LinkStreamKind } from './link.js';
import { readExactly, readToEnd } from './stream-reads.js';

/** A header or a description is a few hundred bytes; anything past this is a broken peer. */
export const MAX_HEADER_BYTES = 4096;
const MAX_DESCRIPTION_BYTES = 1024 * 1024;

interface ForwardHeader {
  readonly tunnelId: string;
  readonly sessionId: string;
  readonly kind: StreamKind;
  readonly client: Address;
  readonly server?: Address | undefined;
}

/** What the accepting instance needs of a remote tunnel beside its route. */
export interface TunnelDescription {
  readonly proxyProto: 0 | 1 | 2;
  readonly policy: PolicySource | undefined;
  /** The bind's edge TLS (MutualTLSCA, MutualTLSAtEdge, TLSTermination) as Opts: the agent's key travels here, on the link only. */
  readonly edgeTls?: Record<string, unknown>;
}

/** The tunnels held here, by session and id (agents/agent-sessions.ts). */
export interface HeldTunnels {
  get(sessionId: string): { readonly tunnels: ReadonlyMap<string, LiveTunnel> } | undefined;
}

/** A length-prefixed JSON frame: two bytes of length, then the text. */
export function frame(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value));
  if (body.length > MAX_HEADER_BYTES) throw new Error('a link header is too large');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(body.length);
  return Buffer.concat([length, body]);
}

/** The accepting side: opens forward streams to the holders of remote tunnels. */
export class Forwarder implements RemoteOpener {
  constructor(private readonly link: ClusterLink) {}

  open(tunnel: LiveTunnel, kind: StreamKind, client: Address, server: Address | undefined): ProtocolStream | undefined {
    const holder = tunnel.remote!;
    const stream = this.link.openIfConnected(holder.instanceId, holder.clusterAddr, 'forward');
    if (!stream) return undefined; // a broken link: this connection fails fast, the next one redials
    const header: ForwardHeader = { tunnelId: tunnel.id, sessionId: tunnel.sessionId, kind, client, ...(server ? { server } : {}) };
    stream.write(frame(header));
    return stream;
  }

  /** Asks the holder for the tunnel's PROXY protocol version and policy inputs; undefined when it no longer holds it. */
  async describe(holder: RemoteHolder, tunnelId: string, sessionId: string): Promise<TunnelDescription | undefined> {
    const stream = await this.link.open(holder.instanceId, holder.clusterAddr, 'describe');
    stream.end(frame({ tunnelId, sessionId }));
    const text = await readToEnd(stream, MAX_DESCRIPTION_BYTES);
    if (text === undefined || text === '') return undefined;
    try {
      return JSON.parse(text) as TunnelDescription;
    } catch {
      // never the parser's message: it quotes the text, which may hold an agent's key
      throw new Error('the holder sent a malformed tunnel description');
    }
  }
}

/** The holding side: serves the streams other instances open to the tunnels held here. */
export class ForwardedStreams {
  /** Connections being carried to agents here for other instances. */
  active = 0;

  constructor(
    private readonly held: HeldTunnels,
    /** This instance's own opener (agents only): its stream cap and PROXY header apply to forwarded connections too. */
    private readonly opener: Pick<ProxyOpener, 'open'>,
  ) {}

  serve(stream: MuxadoStream, kind: LinkStreamKind): void {
    void this.readHeader(stream).then((header) => {
      if (!header) return void stream.destroy();
      if (kind === 'describe') return this.describe(stream, header);
      this.forward(stream, header);
    });
  }

  private async readHeader(stream: MuxadoStream): Promise<Record<string, unknown> | undefined> {
    const length = await readExactly(stream, 2);
    if (!length) return undefined;
    const size = length.readUInt16BE(0);
    if (size > MAX_HEADER_BYTES) return undefined;
    const body = await readExactly(stream, size);
    try {
      const value: unknown = body && JSON.parse(body.toString());
      return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  private tunnel(header: Record<string, unknown>): LiveTunnel | undefined {
    if (typeof header.sessionId !== 'string' || typeof header.tunnelId !== 'string') return undefined;
    return this.held.get(header.sessionId)?.tunnels.get(header.tunnelId);
  }

  private describe(stream: MuxadoStream, header: Record<string, unknown>): void {
    const tunnel = this.tunnel(header);
    stream.end(tunnel ? JSON.stringify(describeTunnel(tunnel)) : '');
    stream.resume();
  }

  private forward(stream: MuxadoStream, header: Record<string, unknown>): void {
    const tunnel = this.tunnel(header);
    const kind = knownKind(header.kind);
    const client = address(header.client);
    const server = header.server === undefined ? undefined : address(header.server);
    if (!tunnel || !kind || !client) return void stream.destroy();
    const ends = { remoteAddress: client.ip, remotePort: client.port, localAddress: server?.ip, localPort: server?.port };
    const opened = this.opener.open({ candidates: [tunnel], pick: () => tunnel }, kind, ends);
    // the accepting side sees the stream close before any byte: a 502, or a closed TCP connection
    if (!opened) return void stream.destroy();
    this.active++;
    splice(stream, opened.stream, () => this.active--);
  }
}

function describeTunnel(tunnel: LiveTunnel): TunnelDescription {
  const { edgeTls } = tunnel.policy;
  return { proxyProto: tunnel.proxyProto, policy: tunnel.policy.source, ...(edgeTls && tunnel.proto !== '' ? { edgeTls: edgeTlsOpts(edgeTls, tunnel.proto) } : {}) };
}

/** Compiles a described policy and edge TLS; what will not compile here leaves the tunnel unrouted. */
export function remoteTunnel(
  route: { tunnelId: string; sessionId: string; accountId: string; proto: string; url: string | null; labels: Readonly<Record<string, string>> | null },
  holder: RemoteHolder,
  description: TunnelDescription,
): LiveTunnel {
  const compiled = description.policy ? compilePolicySource(description.policy) : { ipRestriction: undefined, policy: undefined };
  // checked as the bind's Opts were on the holder: a certificate and key that do not match are refused here too
  const edgeTls = description.edgeTls && edgeTlsOf(description.edgeTls, route.proto as BindProto);
  const policy = edgeTls ? { ...compiled, edgeTls } : compiled;
  return {
    id: route.tunnelId,
    sessionId: route.sessionId,
    accountId: route.accountId,
    proto: route.proto as LiveTunnel['proto'],
    url: route.url,
    labels: route.labels,
    proxyProto: description.proxyProto,
    policy,
    remote: holder,
  };
}

function knownKind(value: unknown): StreamKind | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const kind = value as Record<string, unknown>;
  return Object.values(KINDS).find((each) => each.proto === kind.proto && each.edgeType === kind.edgeType && each.passthroughTls === kind.passthroughTls);
}

function address(value: unknown): Address | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { ip, port } = value as Record<string, unknown>;
  return typeof ip === 'string' && ip.length <= 64 && typeof port === 'number' && Number.isInteger(port) ? { ip, port } : undefined;
}
