// The inter-instance link (CLUSTER.md §2): TLS at CLUSTER_ADDR with mutual authentication by
// link certificates of the cluster CA, one muxado session per pair of instances, opened on
// demand, heartbeated, opened again on the next use after it breaks. Carries `forward` streams (a
// public connection, cluster/forwarding.ts) and `describe` streams (a tunnel's policy inputs).
import { once } from 'node:events';
import tls from 'node:tls';
import { MuxadoSession } from '../muxado/session.js';
import type { MuxadoStream } from '../muxado/stream.js';
import type { CertificateAuthority } from '../tls/ca.js';
import { issueCertificate } from '../tls/certificates.js';
import { readExactly, readToEnd } from './stream-reads.js';

/** The name every link certificate carries, and the only one a link end accepts: agent and edge certificates of the same CA are refused. */
export const LINK_NAME = 'link.cluster.burrow.invalid';

/** The first byte of every stream says what it is. */
const KIND = { hello: 0, ping: 1, forward: 2, describe: 3 } as const;

/** What a stream the peer opens carries. */
export type LinkStreamKind = 'forward' | 'describe';
const MAX_ID_BYTES = 64;

/**
 * Up to 256 KiB of frames may queue on the link's TLS socket before DATA waits for its 'drain':
 * at the socket's own 16 KiB a bulk stream moved about one frame per event-loop turn, and the
 * holding instance spent half as much CPU again as on a same-instance transfer (measured).
 */
const LINK_MUXADO = { transportBuffer: 256 * 1024 } as const;
/** AES-128-GCM: the link's bulk is encrypted once more than a same-instance path, and AES-256 took a tenth of each end's CPU (perf). */
const LINK_CIPHERS = 'TLS_AES_128_GCM_SHA256';

export interface LinkCredentials {
  /** The cluster CA's certificate: the only issuer either end trusts. */
  readonly caPem: string;
  readonly cert: string;
  readonly key: string;
}

/** A certificate for this instance's link end, server and client at once. */
export async function linkCredentials(ca: CertificateAuthority): Promise<LinkCredentials> {
  const leaf = await issueCertificate(ca, { dnsNames: [LINK_NAME], clientAuth: true });
  return { caPem: ca.certPem, cert: leaf.certPem, key: leaf.keyPem };
}

export interface ClusterLinkOptions {
  readonly instanceId: string;
  readonly credentials: LinkCredentials;
  /** A stream the peer opened to carry a connection here. */
  readonly onStream: (stream: MuxadoStream, peerId: string, kind: LinkStreamKind) => void;
  readonly heartbeatIntervalMs?: number;
  /** No answer to a heartbeat within this: the session is closed (its streams fail at once). */
  readonly heartbeatToleranceMs?: number;
  readonly connectTimeoutMs?: number;
}

export class ClusterLink {
  readonly server: tls.Server;
  private readonly sessions = new Map<string, MuxadoSession>();
  private readonly dialing = new Map<string, Promise<MuxadoSession>>();
  private readonly all = new Set<MuxadoSession>();

  constructor(private readonly options: ClusterLinkOptions) {
    const { caPem, cert, key } = options.credentials;
    this.server = tls.createServer({ ca: caPem, cert, key, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3', ciphers: LINK_CIPHERS }, (socket) => {
      // OpenSSL checked the chain and clientAuth; the name keeps other leaves of the CA out
      if (!hasLinkName(socket.getPeerCertificate())) return void socket.destroy();
      // Small frames (a request head, a window update) go at once: with Nagle a forwarded request waited on delayed ACKs (+85 ms p50 measured).
      socket.setNoDelay(true);
      this.adopt(new MuxadoSession(socket, { side: 'server', ...LINK_MUXADO }), undefined);
    });
    this.server.on('tlsClientError', () => {}); // a stranger: the handshake fails, nothing else happens
  }

  async listen(port: number, host: string): Promise<string> {
    this.server.listen(port, host);
    await once(this.server, 'listening');
    const address = this.server.address() as { address: string; port: number };
    return `${address.address}:${address.port}`;
  }

  /** A new stream to `peerId` at `addr` (host:port), over its session, dialed if there is none. */
  async open(peerId: string, addr: string, kind: LinkStreamKind = 'forward'): Promise<MuxadoStream> {
    return this.openOn(this.sessions.get(peerId) ?? (await this.dial(peerId, addr)), kind);
  }

  /**
   * A new stream now, over the session already up; undefined when there is none (or it is going
   * away): the caller fails its connection fast, and a dial starts for the next one.
   */
  openIfConnected(peerId: string, addr: string, kind: LinkStreamKind = 'forward'): MuxadoStream | undefined {
    const session = this.sessions.get(peerId);
    if (session) {
      try {
        return this.openOn(session, kind);
      } catch {
        session.close(); // going away: the next use dials again
      }
    }
    void this.dial(peerId, addr).catch(() => {});
    return undefined;
  }

  private openOn(session: MuxadoSession, kind: LinkStreamKind): MuxadoStream {
    const stream = session.open();
    stream.on('error', () => {});
    stream.write(Buffer.of(KIND[kind]));
    return stream;
  }

  /** Stops listening and closes every session. */
  async close(): Promise<void> {
    for (const session of this.all) session.close();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private dial(peerId: string, addr: string): Promise<MuxadoSession> {
    let pending = this.dialing.get(peerId);
    if (!pending) {
      pending = this.connect(peerId, addr).finally(() => this.dialing.delete(peerId));
      this.dialing.set(peerId, pending);
    }
    return pending;
  }

  private async connect(peerId: string, addr: string): Promise<MuxadoSession> {
    const { caPem, cert, key } = this.options.credentials;
    const colon = addr.lastIndexOf(':');
    const host = addr.slice(0, colon).replace(/^\[|\]$/g, '');
    const socket = tls.connect({ host, port: Number(addr.slice(colon + 1)), ca: caPem, cert, key, servername: LINK_NAME, minVersion: 'TLSv1.3', ciphers: LINK_CIPHERS });
    socket.setNoDelay(true);
    const timer = setTimeout(() => socket.destroy(new Error(`no link to ${addr} within the timeout`)), this.options.connectTimeoutMs ?? 5_000);
    try {
      await once(socket, 'secureConnect');
    } finally {
      clearTimeout(timer);
    }
    const session = new MuxadoSession(socket, { side: 'client', ...LINK_MUXADO });
    const hello = session.open();
    hello.on('error', () => {});
    hello.end(Buffer.concat([Buffer.of(KIND.hello), Buffer.from(this.options.instanceId)]));
    this.adopt(session, peerId);
    return session;
  }

  /** Serves the peer's streams and heartbeats the session; `peerId` is known to a dialer, learnt from the hello by the other end. */
  private adopt(session: MuxadoSession, peerId: string | undefined): void {
    this.all.add(session);
    let learnt: (id: string) => void = () => {};
    const peer: Promise<string> = peerId !== undefined ? Promise.resolve(peerId) : new Promise((resolve) => (learnt = resolve));
    if (peerId !== undefined) this.sessions.set(peerId, session);
    session.on('stream', (stream) => {
      stream.on('error', () => {});
      void readExactly(stream, 1).then(async (first) => {
        const kind = first?.[0];
        if (kind === KIND.ping) {
          stream.end(Buffer.of(KIND.ping));
          return void stream.resume();
        }
        if (kind === KIND.hello && peerId === undefined) {
          const id = await readToEnd(stream, MAX_ID_BYTES);
          if (!id) return session.close();
          // the first session between two instances serves both directions
          if (!this.sessions.has(id)) this.sessions.set(id, session);
          return learnt(id);
        }
        if (kind === KIND.forward) return this.options.onStream(stream, await peer, 'forward');
        if (kind === KIND.describe) return this.options.onStream(stream, await peer, 'describe');
        stream.destroy();
      });
    });
    const heartbeat = setInterval(() => this.ping(session), this.options.heartbeatIntervalMs ?? 5_000);
    heartbeat.unref();
    session.once('close', () => {
      clearInterval(heartbeat);
      this.all.delete(session);
      for (const [id, held] of this.sessions) if (held === session) this.sessions.delete(id);
    });
  }

  private ping(session: MuxadoSession): void {
    let stream: MuxadoStream;
    try {
      stream = session.open();
    } catch {
      return; // closed or going away: nothing left to watch
    }
    stream.on('error', () => {});
    const timer = setTimeout(() => session.close(new Error('the link missed its heartbeat')), this.options.heartbeatToleranceMs ?? 10_000);
    timer.unref();
    stream.once('data', () => clearTimeout(timer));
    stream.end(Buffer.of(KIND.ping));
    stream.resume();
  }
}

function hasLinkName(cert: tls.PeerCertificate): boolean {
  return (cert.subjectaltname ?? '').split(', ').includes(`DNS:${LINK_NAME}`);
}
