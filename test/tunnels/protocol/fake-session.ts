/**
 * An in-memory StreamSession pair standing in for muxado: each stream is two one-way pipes
 * with half-close (end() = FIN), reset(code) = RST (the peer stream is destroyed with an error
 * carrying the code), SYN with the first write (the peer session emits 'stream' then).
 */
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import type { ProtocolStream, StreamSession } from '../../../src/tunnels/protocol/stream-session.js';

export class StreamResetError extends Error {
  constructor(readonly code: number) {
    super(`stream reset by peer (code ${code})`);
  }
}

export class FakeStream extends Duplex implements ProtocolStream {
  peer!: FakeStream;
  /** Every chunk written, in order (to check "one write"). */
  readonly writes: Buffer[] = [];
  /** Code of the RST this side sent, if any. */
  sentReset: number | null = null;
  /** Code of the RST the peer sent, if any. */
  receivedReset: number | null = null;
  /** Whether this side sent FIN. */
  finSent = false;
  private synSent = false;

  constructor(
    readonly id: number,
    private readonly owner: FakeSession,
    private readonly onSyn: (() => void) | null,
  ) {
    super({ allowHalfOpen: true });
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.syn();
    this.writes.push(Buffer.from(chunk));
    if (!this.peer.destroyed && this.peer.receivedReset === null) this.peer.push(Buffer.from(chunk));
    cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.syn();
    this.finSent = true;
    if (!this.peer.destroyed && this.peer.receivedReset === null) this.peer.push(null);
    cb();
  }

  reset(code: number): void {
    if (this.sentReset !== null) return;
    this.sentReset = code;
    this.syn();
    const p = this.peer;
    if (!p.destroyed) {
      p.receivedReset = code;
      p.destroy(new StreamResetError(code));
    }
    if (!this.destroyed) this.destroy();
  }

  private syn(): void {
    if (this.synSent) return;
    this.synSent = true;
    this.onSyn?.();
  }

  get session(): FakeSession {
    return this.owner;
  }
}

export class FakeSession extends EventEmitter implements StreamSession {
  peer!: FakeSession;
  private nextId: number;
  private readonly streams = new Set<FakeStream>();
  closed = false;
  goAways: { code: number | undefined; debug: string | undefined }[] = [];
  closeError: Error | undefined;

  constructor(firstId: number) {
    super();
    this.nextId = firstId;
  }

  open(): FakeStream {
    const id = this.nextId;
    this.nextId += 2;
    let remote: FakeStream | undefined;
    const local = new FakeStream(id, this, () => {
      if (remote && !this.peer.closed) this.peer.emit('stream', remote);
    });
    remote = new FakeStream(id, this.peer, null);
    remote.on('error', () => {}); // resets reach the accepting side as errors; tests inspect receivedReset
    local.peer = remote;
    remote.peer = local;
    this.track(local);
    this.peer.track(remote);
    if (this.closed) local.destroy(new Error('session closed'));
    return local;
  }

  private track(s: FakeStream): void {
    this.streams.add(s);
    s.once('close', () => this.streams.delete(s));
  }

  goAway(code?: number, debug?: string): void {
    this.goAways.push({ code, debug });
    if (!this.peer.closed) this.peer.emit('goaway', code, debug);
  }

  close(error?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.closeError = error;
    for (const s of this.streams) s.destroy();
    this.emit('close', error);
    this.peer.close(new Error('transport closed'));
  }

  get openStreams(): number {
    return this.streams.size;
  }
}

/** [server, agent]: server-opened ids are even from 2, agent-opened odd from 3. */
export function sessionPair(): [FakeSession, FakeSession] {
  const server = new FakeSession(2);
  const agent = new FakeSession(3);
  server.peer = agent;
  agent.peer = server;
  return [server, agent];
}

/** Reads a stream to its end (FIN); rejects on reset. */
export function readAll(s: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('error', reject);
    s.once('close', () => {
      if (!s.readableEnded) reject(new Error('closed before end'));
    });
  });
}

/** The 4-byte big-endian type prefix. */
export function typeBytes(t: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(t >>> 0);
  return b;
}

/** Agent side: opens a typed stream and writes `type + body` in one write (no FIN). */
export function agentOpen(agent: FakeSession, type: number, body?: string | Buffer): FakeStream {
  const s = agent.open();
  s.on('error', () => {});
  s.write(Buffer.concat([typeBytes(type), body === undefined ? Buffer.alloc(0) : Buffer.from(body)]));
  return s;
}

/** Next 'stream' event of a session. */
export function nextStream(sess: FakeSession): Promise<FakeStream> {
  return new Promise((resolve) => sess.once('stream', resolve));
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resolves with the event's arguments. */
export function once<T extends unknown[]>(em: EventEmitter, ev: string): Promise<T> {
  return new Promise((resolve) => em.once(ev, (...args: unknown[]) => resolve(args as T)));
}
