/**
 * One muxado stream: a Node Duplex (bytes, half-close both ways) whose writes are framed into
 * DATA frames within the peer's window and whose reads grant WNDINC only for what the consumer
 * has taken out.
 */
import { Duplex } from 'node:stream';
import { ErrorCode, Flag, MuxadoError } from './frame.js';

/** What a stream needs from its session. @internal */
export interface StreamHost {
  /** Largest DATA payload sent in one frame. */
  readonly maxSendFrame: number;
  /** True while the transport is over its high-water mark: data frames wait. */
  readonly blocked: boolean;
  sendData(stream: MuxadoStream, flags: number, payload: Buffer): void;
  sendFin(stream: MuxadoStream): void;
  enqueueWrite(stream: MuxadoStream): void;
  consumed(stream: MuxadoStream, bytes: number): void;
  resetStream(stream: MuxadoStream, code: number): void;
  streamDestroyed(stream: MuxadoStream): void;
}

/** Received payloads smaller than this are copied into a staging buffer while the reader lags, so tiny frames cost neither an object each nor the retention of their whole input chunk. */
const SMALL_PAYLOAD = 4096;
const STAGE_SIZE = 16384;

export class MuxadoStream extends Duplex {
  readonly id: number;
  /** Opened by the peer (its SYN). @internal */
  readonly remote: boolean;
  /** @internal */ readonly host: StreamHost;
  /** SYN sent or received: the peer knows this id. @internal */
  onWire: boolean;
  /** Bytes we may still send before a WNDINC. @internal */
  sendWindow: number;
  /** Bytes the peer may still send us. @internal */
  recvAvail: number;
  /** Bytes consumed by the reader and not yet granted back. @internal */
  ungranted = 0;
  /** @internal */ grantQueued = false;
  /** Bytes granted by ACK nudges, not by consumption. @internal */
  nudgeGranted = 0;
  /** @internal */ writeQueued = false;
  /** @internal */ finSent = false;
  /** @internal */ finReceived = false;
  /** @internal */ resetSent = false;
  /** @internal */ remoteReset = false;
  /** No longer in the session's map. @internal */
  removed = false;

  private chunks: Buffer[] | null = null;
  private chunkIdx = 0;
  private pendingCb: ((error?: Error | null) => void) | null = null;
  private stage: Buffer | null = null;
  private stageLen = 0;
  /** _read() found nothing to push: Node will not call it again until we push, so the next payload must be pushed, not staged. */
  private wantRead = false;

  /** @internal Streams are made by {@link MuxadoSession.open} and the session's 'stream' event. */
  constructor(host: StreamHost, id: number, remote: boolean, windowSize: number) {
    super({
      allowHalfOpen: true,
      readableHighWaterMark: windowSize,
      writableHighWaterMark: windowSize,
      decodeStrings: true,
      autoDestroy: true,
      emitClose: true,
    });
    this.host = host;
    this.id = id;
    this.remote = remote;
    this.onWire = remote;
    this.sendWindow = windowSize;
    this.recvAvail = windowSize;
  }

  /** Sends RST(code) (if the peer knows the stream) and destroys the stream locally, without an error. */
  reset(code: number): void {
    if (this.destroyed) return;
    this.host.resetStream(this, code);
    this.destroy();
  }

  // ---- writable side ----

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks = [chunk];
    this.chunkIdx = 0;
    this.pendingCb = callback;
    this.flushWrites();
  }

  override _writev(entries: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    let total = 0;
    for (const e of entries) total += e.chunk.length;
    const chunks = entries.map((e) => e.chunk);
    // many small writes: one frame, one copy
    this.chunks = total <= this.host.maxSendFrame && entries.length > 1 ? [Buffer.concat(chunks, total)] : chunks;
    this.chunkIdx = 0;
    this.pendingCb = callback;
    this.flushWrites();
  }

  /** Sends what the window and the transport allow; completes the pending write when all is sent. @internal */
  flushWrites(): void {
    const chunks = this.chunks;
    if (chunks === null) return;
    const host = this.host;
    while (this.chunkIdx < chunks.length) {
      const c = chunks[this.chunkIdx] as Buffer;
      if (c.length === 0) {
        this.chunkIdx++;
        continue;
      }
      if (this.sendWindow <= 0) return; // a WNDINC resumes us
      if (host.blocked) {
        host.enqueueWrite(this); // the transport's 'drain' resumes us
        return;
      }
      const n = Math.min(c.length, this.sendWindow, host.maxSendFrame);
      let piece: Buffer;
      if (n === c.length) {
        piece = c;
        this.chunkIdx++;
      } else {
        piece = c.subarray(0, n);
        chunks[this.chunkIdx] = c.subarray(n);
      }
      this.sendWindow -= n;
      const flags = this.onWire ? 0 : Flag.Syn;
      this.onWire = true;
      host.sendData(this, flags, piece);
    }
    this.chunks = null;
    const cb = this.pendingCb;
    this.pendingCb = null;
    cb?.();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.remoteReset && !this.resetSent) this.host.sendFin(this);
    callback();
  }

  // ---- readable side ----

  override _read(): void {
    if (this.stageLen > 0) this.flushStage();
    else this.wantRead = true;
  }

  /** A piece of a DATA payload from the peer. @internal */
  receive(part: Buffer): void {
    if (part.length < SMALL_PAYLOAD && !this.wantRead && (this.stageLen > 0 || this.readableLength > 0)) {
      // the reader lags: coalesce small payloads (copy) instead of queueing one Buffer each
      let stage = this.stage;
      if (stage !== null && this.stageLen + part.length > stage.length) {
        this.flushStage();
        stage = null;
      }
      if (stage === null) stage = this.stage = Buffer.allocUnsafe(STAGE_SIZE);
      part.copy(stage, this.stageLen);
      this.stageLen += part.length;
      return;
    }
    if (this.stageLen > 0) this.flushStage();
    this.wantRead = false;
    this.push(part);
  }

  /** The peer's FIN. @internal */
  receiveFin(): void {
    if (this.stageLen > 0) this.flushStage();
    this.wantRead = false;
    this.push(null);
  }

  private flushStage(): void {
    const stage = this.stage as Buffer;
    const n = this.stageLen;
    this.stage = null;
    this.stageLen = 0;
    this.wantRead = false;
    this.push(stage.subarray(0, n));
  }

  /** Bytes received and not yet consumed, including the staging buffer. */
  get bufferedLength(): number {
    return this.readableLength + this.stageLen;
  }

  /**
   * Every byte the consumer takes out of the stream passes through a 'data' event (flowing mode,
   * pipe, and `read()` in paused mode and async iteration alike): that is where consumption is
   * counted for WNDINC.
   */
  override emit(event: string | symbol, ...args: any[]): boolean {
    if (event === 'data') {
      const chunk = args[0] as Buffer | string;
      this.host.consumed(this, typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length);
    }
    return super.emit(event, ...args);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.host.streamDestroyed(this);
    this.stage = null;
    this.stageLen = 0;
    const cb = this.pendingCb;
    if (cb !== null) {
      this.pendingCb = null;
      this.chunks = null;
      cb(error ?? new MuxadoError(ErrorCode.StreamClosed, 'muxado: stream destroyed before the write was sent'));
    }
    callback(error);
  }
}
