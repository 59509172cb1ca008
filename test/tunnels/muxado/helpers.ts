/** Test plumbing for muxado: in-memory and loopback transports, and a raw-frame peer. */
import net from 'node:net';
import { Duplex } from 'node:stream';
import { setImmediate as immediate } from 'node:timers/promises';
import { FrameCollector, type Frame, MuxadoSession, type MuxadoOptions } from '../../../src/tunnels/muxado/index.js';

/**
 * One end of an in-memory byte pipe with real backpressure: a write completes only once the
 * other end's readable buffer is under its high-water mark, so `write()` returns false and
 * 'drain' follows as on a socket.
 */
class PipeEnd extends Duplex {
  peer!: PipeEnd;
  /** The peer's write waiting for us to read. */
  private release: (() => void) | null = null;
  /** Every byte written by this end (for assertions on what a session sent). */
  readonly written: Buffer[] = [];
  record = false;

  constructor(highWaterMark: number) {
    super({ readableHighWaterMark: highWaterMark, writableHighWaterMark: highWaterMark, allowHalfOpen: true });
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (error?: Error | null) => void): void {
    if (this.record) this.written.push(Buffer.from(chunk));
    const peer = this.peer;
    if (peer.destroyed || peer.readableEnded) return cb();
    if (peer.push(chunk)) cb();
    else peer.release = () => cb();
  }

  override _read(): void {
    const r = this.release;
    if (r !== null) {
      this.release = null;
      r();
    }
  }

  override _final(cb: (error?: Error | null) => void): void {
    if (!this.peer.destroyed) this.peer.push(null);
    cb();
  }

  override _destroy(error: Error | null, cb: (error?: Error | null) => void): void {
    const r = this.release;
    this.release = null;
    r?.();
    if (!this.peer.destroyed && !this.peer.readableEnded) this.peer.push(null);
    cb(error);
  }
}

/** Swallows a stream's errors (tests that close sessions under open streams). */
export function quiet<T extends NodeJS.EventEmitter>(stream: T): T {
  stream.on('error', () => undefined);
  return stream;
}

export function memoryPair(highWaterMark = 64 * 1024): [PipeEnd, PipeEnd] {
  const a = new PipeEnd(highWaterMark);
  const b = new PipeEnd(highWaterMark);
  a.peer = b;
  b.peer = a;
  return [a, b];
}

export async function tcpPair(): Promise<[net.Socket, net.Socket]> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => client.once('connect', resolve));
  const serverSide = await accepted;
  server.close();
  client.setNoDelay(true);
  serverSide.setNoDelay(true);
  return [serverSide, client];
}

export interface SessionPair {
  server: MuxadoSession;
  client: MuxadoSession;
  serverTransport: Duplex;
  clientTransport: Duplex;
}

export function sessionPair(options: Partial<MuxadoOptions> = {}, transports: [Duplex, Duplex] = memoryPair()): SessionPair {
  const [serverTransport, clientTransport] = transports;
  const server = new MuxadoSession(serverTransport, { ...options, side: 'server' });
  const client = new MuxadoSession(clientTransport, { ...options, side: 'client' });
  return { server, client, serverTransport, clientTransport };
}

/** Deterministic pseudo-random bytes. */
export function pattern(length: number, seed = 1): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf[i] = x & 0xff;
  }
  return buf;
}

export function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/** Writes `data` in `chunkSize` pieces honouring backpressure, then ends. */
export async function writeAll(stream: NodeJS.WritableStream, data: Buffer, chunkSize = 64 * 1024): Promise<void> {
  for (let off = 0; off < data.length; off += chunkSize) {
    if (!stream.write(data.subarray(off, off + chunkSize))) {
      await new Promise<void>((resolve, reject) => {
        const onDrain = () => {
          stream.off('error', onError);
          resolve();
        };
        const onError = (e: Error) => {
          stream.off('drain', onDrain);
          reject(e);
        };
        stream.once('drain', onDrain);
        stream.once('error', onError);
      });
    }
  }
  await new Promise<void>((resolve) => stream.end(resolve));
}

export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await immediate();
}

export async function until(pred: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * A hand-driven peer: writes raw bytes into a session and decodes every frame the session sends
 * back, so tests can assert on the wire.
 */
export class RawPeer {
  readonly session: MuxadoSession;
  readonly transport: PipeEnd;
  readonly sessionTransport: PipeEnd;
  readonly collector: FrameCollector;
  ended = false;

  constructor(options: Partial<MuxadoOptions> = {}, side: 'server' | 'client' = 'server') {
    const [sessionEnd, peerEnd] = memoryPair();
    this.transport = peerEnd;
    this.sessionTransport = sessionEnd;
    this.collector = new FrameCollector({ continueAfterGoAway: true });
    peerEnd.on('data', (chunk: Buffer) => this.collector.push(chunk));
    peerEnd.on('end', () => {
      this.ended = true;
    });
    peerEnd.on('error', () => undefined);
    this.session = new MuxadoSession(sessionEnd, { ...options, side });
  }

  get frames(): Frame[] {
    return this.collector.frames;
  }

  send(...bufs: Buffer[]): void {
    for (const b of bufs) this.transport.write(b);
  }

  async waitFrame(pred: (f: Frame) => boolean, what = 'frame', timeoutMs = 2000): Promise<Frame> {
    let found: Frame | undefined;
    await until(() => (found = this.frames.find(pred)) !== undefined, timeoutMs, what);
    return found as Frame;
  }
}

export function u32(payload: Buffer, offset = 0): number {
  return payload.readUInt32BE(offset);
}
