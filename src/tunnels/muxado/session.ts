/**
 * A muxado session over one byte-stream transport (TLS socket, TCP socket, in-memory duplex).
 * Knows nothing of the agent protocol above it. See README.md in this directory.
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { MAX_CONTROL_BACKLOG, muxadoConfig, type MuxadoOptions } from './config.js';
import { FrameDecoder, type FrameSink } from './decode.js';
import {
  ErrorCode,
  errorCodeName,
  Flag,
  FrameType,
  HEADER_SIZE,
  MAX_WNDINC,
  MuxadoError,
  STREAM_ID_MASK,
  encodeGoAway,
  encodeRst,
  encodeWndInc,
  writeHeader,
} from './frame.js';
import { MuxadoStream, type StreamHost } from './stream.js';

/** Payloads up to this size are copied next to their header (one write); bigger ones are written after it (corked, one writev). */
const COALESCE_PAYLOAD = 512;
/** Remembered ids the peer skipped (and may still open, SYNs can arrive out of order); the oldest are forgotten past this. */
const MAX_SKIPPED_IDS = 1024;
/** Window a stream may gain from ACK nudges over its life: bounds what a peer can make us buffer by provoking them. */
const MAX_NUDGE_GRANT = 1 << 16;

/** What a peer may send until {@link MuxadoSession.limitInput} lifts it (e.g. before it authenticated). */
export interface InputLimit {
  /** Concurrent peer-opened streams; a SYN past it gets RST AcceptQueueFull. */
  readonly streams: number;
  /** DATA payload bytes in all, over every stream; past it: GOAWAY EnhanceYourCalm and close. */
  readonly bytes: number;
}

export interface MuxadoSession {
  on(event: 'stream', listener: (stream: MuxadoStream) => void): this;
  on(event: 'goaway', listener: (code: number, debug: string) => void): this;
  on(event: 'close', listener: (error?: Error) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'stream', listener: (stream: MuxadoStream) => void): this;
  once(event: 'goaway', listener: (code: number, debug: string) => void): this;
  once(event: 'close', listener: (error?: Error) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

export class MuxadoSession extends EventEmitter {
  readonly side: 'server' | 'client';
  readonly windowSize: number;
  private readonly transport: Duplex;
  private readonly maxIncoming: number;
  private readonly flushTimeoutMs: number;
  private readonly transportBuffer: number;
  private readonly host: StreamHost;
  private readonly decoder: FrameDecoder;
  private readonly streams = new Map<number, MuxadoStream>();
  private nextLocalId: number;
  private readonly remoteParity: number;
  private lastRemoteId = 0;
  private readonly skipped = new Set<number>();
  private incomingCount = 0;
  private inputLimit: InputLimit | null = null;
  /** DATA payload bytes received since the input limit was set. */
  private limitedInput = 0;
  private localGoneAway = false;
  private _closed = false;
  /** Transport over its high-water mark. */
  private blocked = false;
  private readonly waiting: MuxadoStream[] = [];
  private corked = false;
  /** The cork lasts one more event-loop turn (holdFlush)… */
  private holdCork = false;
  /** …but only one: new streams every turn must not keep the frames back for ever. */
  private heldOnce = false;
  private readonly grantQueue: MuxadoStream[] = [];
  private grantScheduled = false;
  /** Target of the DATA frame being received (null: payload discarded). */
  private dataTarget: MuxadoStream | null = null;
  private dataFlags = 0;
  private readonly nudgeAcks: boolean;
  /** False from a transport read until our next write: a read we answer with nothing leaves its ACK delayed. */
  private wroteSinceRead = true;
  private nudgeScheduled = false;
  /** The newest of our streams the peer knew and that is gone: a WNDINC to it is ignored by both agent families. */
  private lastGoneLocalId = 0;
  private readonly uncorkFn: () => void;
  private readonly grantFn: () => void;
  private readonly nudgeFn: () => void;
  private readonly onTransportData: (chunk: Buffer) => void;
  private readonly onTransportDrain: () => void;
  private readonly onTransportEnd: () => void;
  private readonly onTransportError: (error: Error) => void;
  private readonly onTransportClose: () => void;

  constructor(transport: Duplex, options: MuxadoOptions) {
    super();
    this.transport = transport;
    const config = muxadoConfig(options);
    this.side = config.side;
    this.windowSize = config.windowSize;
    this.maxIncoming = config.maxIncomingStreams;
    this.flushTimeoutMs = config.closeFlushTimeoutMs;
    this.transportBuffer = config.transportBuffer;
    this.nudgeAcks = config.nudgeAcks;
    this.nextLocalId = this.side === 'server' ? 2 : 3;
    this.remoteParity = this.side === 'server' ? 1 : 0;
    const maxSendFrame = config.maxSendFrameSize;

    const self = this;
    this.host = {
      maxSendFrame,
      get blocked() {
        return self.blocked;
      },
      sendData: (stream, flags, payload) => this.sendData(stream.id, flags, payload),
      sendFin: (stream) => this.sendFin(stream),
      enqueueWrite: (stream) => {
        if (!stream.writeQueued) {
          stream.writeQueued = true;
          this.waiting.push(stream);
        }
      },
      consumed: (stream, bytes) => this.consumed(stream, bytes),
      resetStream: (stream, code) => this.resetStream(stream, code),
      streamDestroyed: (stream) => this.streamDestroyed(stream),
    };

    const sink: FrameSink = {
      onDataStart: (id, flags, length) => this.onDataStart(id, flags, length),
      onDataChunk: (chunk) => {
        const t = this.dataTarget;
        if (t !== null && !t.destroyed) t.receive(chunk);
      },
      onDataEnd: () => this.onDataEnd(),
      onRst: (id, code) => this.onRst(id, code),
      onWndInc: (id, inc) => this.onWndInc(id, inc),
      onGoAway: (lastId, code, debug) => this.onGoAway(lastId, code, debug),
      onError: (code, message) => this.protocolError(code, message),
    };
    this.decoder = new FrameDecoder(sink, { maxFrameSize: config.maxFrameSize, ignoreUnknownTypes: config.ignoreUnknownFrameTypes });

    this.uncorkFn = () => {
      if (this.holdCork && !this.heldOnce && !this._closed) {
        this.holdCork = false;
        this.heldOnce = true;
        setImmediate(this.uncorkFn);
        return;
      }
      this.holdCork = this.heldOnce = false;
      this.corked = false;
      this.transport.uncork();
    };
    this.grantFn = () => this.flushGrants();
    this.nudgeFn = () => this.nudgeAck();
    this.onTransportData = (chunk) => {
      // a peer that keeps sending while a megabyte of ours waits unread would have us queue
      // answers (grants, echoes, RSTs) without end: cut off
      if (this.blocked && this.transport.writableLength > MAX_CONTROL_BACKLOG) {
        this.protocolError(ErrorCode.EnhanceYourCalm, 'muxado: peer sends without reading');
        return;
      }
      this.wroteSinceRead = false;
      this.decoder.push(chunk);
      // after this turn's ticks and promises: the grants and answers this chunk caused come first
      if (this.nudgeAcks && !this.nudgeScheduled && !this._closed) {
        this.nudgeScheduled = true;
        setImmediate(this.nudgeFn);
      }
    };
    this.onTransportDrain = () => this.drain();
    this.onTransportEnd = () => this.terminate(new MuxadoError(ErrorCode.PeerEOF, 'muxado: peer closed the transport'));
    this.onTransportError = (error) => this.terminate(new MuxadoError(ErrorCode.SessionClosed, `muxado: transport error: ${error.message}`, { cause: error }));
    this.onTransportClose = () => this.terminate(new MuxadoError(ErrorCode.SessionClosed, 'muxado: transport closed'));

    transport.on('data', this.onTransportData);
    transport.on('drain', this.onTransportDrain);
    transport.on('end', this.onTransportEnd);
    transport.on('error', this.onTransportError);
    transport.on('close', this.onTransportClose);
    if (transport.destroyed) queueMicrotask(() => this.onTransportClose());
  }

  get closed(): boolean {
    return this._closed;
  }

  /** Open streams (in the session's map: not yet FIN'd both ways, reset or destroyed). */
  get streamCount(): number {
    return this.streams.size;
  }

  /** The highest stream id the peer has opened (the GOAWAY last-stream-id). */
  get lastRemoteStreamId(): number {
    return this.lastRemoteId;
  }

  /**
   * Bounds what the peer may send from now on (`null` lifts the bound): fewer concurrent streams
   * than `maxIncomingStreams`, and a total of DATA bytes whose excess closes the session.
   */
  limitInput(limit: InputLimit | null): void {
    this.inputLimit = limit;
    this.limitedInput = 0;
  }

  /** A new local stream. Nothing is sent until its first write (SYN rides on it) or end(). */
  open(): MuxadoStream {
    if (this._closed) throw new MuxadoError(ErrorCode.SessionClosed, 'muxado: session closed');
    if (this.localGoneAway) throw new MuxadoError(ErrorCode.SessionClosed, 'muxado: session is going away');
    const id = this.nextLocalId;
    if (id > STREAM_ID_MASK) throw new MuxadoError(ErrorCode.StreamsExhausted, 'muxado: stream ids exhausted');
    this.nextLocalId += 2;
    const stream = new MuxadoStream(this.host, id, false, this.windowSize);
    this.streams.set(id, stream);
    return stream;
  }

  /**
   * Sends GOAWAY(last peer stream id, code, debug) once; afterwards the peer's new streams are
   * refused (RST StreamRefused) and open() throws. Existing streams carry on until close().
   * Clean exit: goAway() then close() (code 0, "no error").
   */
  goAway(code: number = ErrorCode.None, debug?: string): void {
    if (this._closed || this.localGoneAway) return;
    this.localGoneAway = true;
    this.writeRaw(encodeGoAway(this.lastRemoteId, code, debug ?? (code === ErrorCode.None ? 'no error' : errorCodeName(code))));
  }

  /**
   * Ends the session: destroys every stream (with `error` if it is a MuxadoError, else a
   * MuxadoError(SessionClosed)), flushes what is already queued on the transport (bounded by
   * closeFlushTimeoutMs), then destroys it. Emits 'close' (with `error`). Idempotent.
   */
  close(error?: Error): void {
    this.terminate(error ?? null);
  }

  /**
   * Keeps the frames of this turn for one more turn: the poll phase between reads what is already
   * waiting, so a new stream's SYN and first bytes from its client (sent at once after connect)
   * leave in one TLS record and one syscall instead of two. Costs at most one loop iteration,
   * which does not block while a flush is pending; frames are never held longer than that, however
   * many turns in a row ask.
   */
  holdFlush(): void {
    if (this.corked) this.holdCork = true;
  }

  // ---- output ----

  private writeRaw(buf: Buffer): void {
    const t = this.transport;
    if (t.destroyed || t.writableEnded) return;
    this.wroteSinceRead = true;
    if (!this.corked) {
      // until the end of this event-loop turn: every frame the turn's I/O callbacks make (many
      // connections' worth under load) leaves in one writev, one TLS record, one syscall
      this.corked = true;
      t.cork();
      setImmediate(this.uncorkFn);
    }
    // once write() said no, 'drain' follows when the queue is empty, whatever we write meanwhile
    if (!t.write(buf) && t.writableLength >= this.transportBuffer) this.blocked = true;
  }

  private sendData(id: number, flags: number, payload: Buffer): void {
    const n = payload.length;
    if (n <= COALESCE_PAYLOAD) {
      const buf = Buffer.allocUnsafe(HEADER_SIZE + n);
      writeHeader(buf, 0, FrameType.Data, flags, id, n);
      if (n > 0) payload.copy(buf, HEADER_SIZE);
      this.writeRaw(buf);
    } else {
      const hdr = Buffer.allocUnsafe(HEADER_SIZE);
      writeHeader(hdr, 0, FrameType.Data, flags, id, n);
      this.writeRaw(hdr);
      this.writeRaw(payload);
    }
  }

  private sendFin(stream: MuxadoStream): void {
    if (stream.finSent || this._closed) return;
    stream.finSent = true;
    const flags = stream.onWire ? Flag.Fin : Flag.Fin | Flag.Syn;
    stream.onWire = true;
    this.sendData(stream.id, flags, EMPTY);
    if (stream.finReceived) this.remove(stream);
  }

  private sendRst(id: number, code: number): void {
    this.writeRaw(encodeRst(id, code));
  }

  /** RST in answer to a peer's frame; a peer that provokes them without reading ours is cut off. */
  private answerRst(id: number, code: number): void {
    if (this.blocked && this.transport.writableLength > MAX_CONTROL_BACKLOG) {
      this.protocolError(ErrorCode.EnhanceYourCalm, 'muxado: peer floods frames without reading');
      return;
    }
    this.sendRst(id, code);
  }

  private drain(): void {
    this.blocked = false;
    const w = this.waiting;
    let i = 0;
    while (i < w.length && !this.blocked) {
      const s = w[i++] as MuxadoStream;
      s.writeQueued = false;
      if (!s.destroyed) s.flushWrites(); // may re-queue itself at the end
    }
    w.splice(0, i);
  }

  // ---- flow control, receive side ----

  private consumed(stream: MuxadoStream, bytes: number): void {
    if (bytes <= 0 || stream.finReceived || stream.removed) return;
    stream.ungranted += bytes;
    if (!stream.grantQueued) {
      stream.grantQueued = true;
      this.grantQueue.push(stream);
      if (!this.grantScheduled) {
        this.grantScheduled = true;
        process.nextTick(this.grantFn);
      }
    }
  }

  /** One WNDINC per stream per tick, for what its reader consumed in that tick; never 0. */
  private flushGrants(): void {
    this.grantScheduled = false;
    const q = this.grantQueue;
    for (let i = 0; i < q.length; i++) {
      const s = q[i] as MuxadoStream;
      s.grantQueued = false;
      const inc = s.ungranted;
      s.ungranted = 0;
      if (inc > 0 && !s.finReceived && !s.removed && !this._closed) {
        s.recvAvail += inc;
        this.writeRaw(encodeWndInc(s.id, inc));
      }
    }
    q.length = 0;
  }

  /**
   * Input answered with nothing (the peer's WNDINC, FIN or RST; a stream whose reader is paused):
   * write a WNDINC of 1 so the ACK rides on a frame now. Its target is one of our finished
   * streams when there is one: RS ignores a WNDINC for a stream it does not hold, GO one for an id
   * it has seen (an id above that kills a GO session), so it changes nothing. Before any of ours
   * has finished, it is a real 1-byte grant on a stream the peer can still write to, counted in
   * that stream's receive window (RS caps its window at 256 KiB anyway).
   */
  private nudgeAck(): void {
    this.nudgeScheduled = false;
    // corked: frames are about to leave anyway; queued output: the ACK rides on that
    if (this.wroteSinceRead || this.corked || this._closed || this.blocked || this.transport.writableLength > 0) return;
    if (this.lastGoneLocalId !== 0) {
      this.wroteSinceRead = true;
      if (!this.transport.write(encodeWndInc(this.lastGoneLocalId, 1))) this.blocked = true; // not corked: this is the turn's end already
      return;
    }
    for (const s of this.streams.values()) {
      if (!s.onWire || s.finReceived || s.removed || s.destroyed || s.resetSent || s.remoteReset || s.nudgeGranted >= MAX_NUDGE_GRANT) continue;
      s.nudgeGranted++;
      s.recvAvail += 1;
      this.wroteSinceRead = true;
      if (!this.transport.write(encodeWndInc(s.id, 1))) this.blocked = true; // not corked: this is the turn's end already
      return;
    }
  }

  // ---- input ----

  private isNewRemoteId(id: number): boolean {
    if (id > this.lastRemoteId) return true;
    return this.skipped.delete(id);
  }

  private noteRemoteId(id: number): void {
    if (id > this.lastRemoteId) {
      // remember the ids skipped over: their SYNs may still come (each side sends SYN lazily, on first write)
      const from = this.lastRemoteId === 0 ? (this.remoteParity === 1 ? 3 : 2) : this.lastRemoteId + 2;
      const start = Math.max(from, id - 2 * MAX_SKIPPED_IDS);
      for (let k = start; k < id; k += 2) this.skipped.add(k);
      if (this.skipped.size > MAX_SKIPPED_IDS) {
        for (const k of this.skipped) {
          this.skipped.delete(k);
          if (this.skipped.size <= MAX_SKIPPED_IDS) break;
        }
      }
      this.lastRemoteId = id;
    }
  }

  private onDataStart(id: number, flags: number, length: number): void {
    this.dataTarget = null;
    this.dataFlags = flags;
    const limit = this.inputLimit;
    if (limit !== null && (this.limitedInput += length) > limit.bytes) {
      return this.protocolError(ErrorCode.EnhanceYourCalm, `muxado: peer sent more than ${limit.bytes} bytes while limited`);
    }
    let stream: MuxadoStream | undefined;
    if ((flags & Flag.Syn) !== 0) {
      if ((id & 1) !== this.remoteParity || id < 2) {
        return this.protocolError(ErrorCode.Protocol, `muxado: SYN on stream ${id} has the wrong parity`);
      }
      if (this.streams.has(id) || !this.isNewRemoteId(id)) {
        return this.protocolError(ErrorCode.Protocol, `muxado: SYN reuses stream id ${id}`);
      }
      this.noteRemoteId(id);
      if (this.localGoneAway) return this.answerRst(id, ErrorCode.StreamRefused);
      if (this.incomingCount >= Math.min(this.maxIncoming, this.inputLimit?.streams ?? Infinity)) return this.answerRst(id, ErrorCode.AcceptQueueFull);
      if (length > this.windowSize) return this.answerRst(id, ErrorCode.FlowControl);
      stream = new MuxadoStream(this.host, id, true, this.windowSize);
      this.streams.set(id, stream);
      this.incomingCount++;
      stream.recvAvail -= length;
      this.emit('stream', stream);
      if (stream.destroyed || this._closed) return;
      this.dataTarget = stream;
      return;
    }
    stream = this.streams.get(id);
    if (stream === undefined || !stream.onWire) {
      // unknown or closed stream: a lone FIN is ignored (a late FIN after our RST or removal), anything else answered once
      if (length === 0 && (flags & Flag.Fin) !== 0) return;
      return this.answerRst(id, ErrorCode.StreamClosed);
    }
    if (stream.finReceived) {
      if (length === 0) return; // duplicate FIN (or an empty frame): ignored, never answered with a FIN
      this.answerRst(id, ErrorCode.StreamClosed);
      stream.resetSent = true;
      stream.destroy(new MuxadoError(ErrorCode.StreamClosed, `muxado: DATA after FIN on stream ${id}`));
      return;
    }
    if (length > stream.recvAvail) {
      this.answerRst(id, ErrorCode.FlowControl);
      stream.resetSent = true;
      stream.destroy(new MuxadoError(ErrorCode.FlowControl, `muxado: peer overran the window on stream ${id}`));
      return;
    }
    stream.recvAvail -= length;
    this.dataTarget = stream;
  }

  private onDataEnd(): void {
    const s = this.dataTarget;
    this.dataTarget = null;
    if (s === null || (this.dataFlags & Flag.Fin) === 0 || s.destroyed || s.finReceived) return;
    s.finReceived = true;
    s.receiveFin();
    if (s.finSent) this.remove(s);
  }

  private onRst(id: number, code: number): void {
    const s = this.streams.get(id);
    if (s === undefined) return; // never answer an RST
    s.remoteReset = true;
    this.remove(s);
    s.destroy(new MuxadoError(code, `muxado: stream ${id} reset by peer (${errorCodeName(code)})`));
  }

  private onWndInc(id: number, inc: number): void {
    if (inc === 0) return;
    const s = this.streams.get(id);
    if (s === undefined || s.destroyed) return;
    s.sendWindow = Math.min(s.sendWindow + inc, MAX_WNDINC);
    s.flushWrites();
  }

  private onGoAway(lastId: number, code: number, debug: Buffer): void {
    const text = debug.toString('utf8');
    this.emit('goaway', code, text);
    this.terminate(
      new MuxadoError(ErrorCode.RemoteGoneAway, `muxado: peer sent GOAWAY (${errorCodeName(code)}${text ? `: ${text}` : ''}), last stream ${lastId}`),
    );
  }

  private protocolError(code: number, message: string): void {
    if (this._closed) return;
    this.decoder.stop();
    this.dataTarget = null;
    this.goAway(code, message.replace(/^muxado: /, ''));
    this.terminate(new MuxadoError(code, message.startsWith('muxado: ') ? message : `muxado: ${message}`));
  }

  // ---- stream lifecycle ----

  private remove(s: MuxadoStream): void {
    if (s.removed) return;
    s.removed = true;
    if (!s.remote && s.onWire && s.id > this.lastGoneLocalId) this.lastGoneLocalId = s.id;
    if (this.streams.get(s.id) === s) this.streams.delete(s.id);
    if (s.remote) this.incomingCount--;
  }

  private resetStream(s: MuxadoStream, code: number): void {
    if (s.removed || this._closed || !s.onWire || s.remoteReset || s.resetSent) return;
    s.resetSent = true;
    this.sendRst(s.id, code);
  }

  /** A stream destroyed locally: tell the peer what it needs, once. */
  private streamDestroyed(s: MuxadoStream): void {
    if (s.removed) return;
    this.remove(s);
    if (this._closed || !s.onWire || s.remoteReset || s.resetSent) return;
    // FIN first (RS only stops writing on RST; FIN ends its upstream), then RST if the peer may still send
    if (!s.finSent) {
      s.finSent = true;
      this.sendData(s.id, Flag.Fin, EMPTY);
    }
    if (!s.finReceived) {
      s.resetSent = true;
      this.sendRst(s.id, ErrorCode.StreamCancelled);
    }
  }

  private terminate(error: Error | null): void {
    if (this._closed) return;
    this._closed = true;
    this.decoder.stop();
    this.dataTarget = null;
    const streamError =
      error instanceof MuxadoError ? error : new MuxadoError(ErrorCode.SessionClosed, error ? `muxado: session closed: ${error.message}` : 'muxado: session closed', error ? { cause: error } : undefined);
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const s of streams) {
      s.removed = true;
      s.destroy(streamError);
    }
    this.incomingCount = 0;
    this.waiting.length = 0;

    const t = this.transport;
    t.off('data', this.onTransportData);
    t.off('drain', this.onTransportDrain);
    t.off('end', this.onTransportEnd);
    t.off('close', this.onTransportClose);
    t.off('error', this.onTransportError);
    t.on('error', ignore); // late transport errors must not crash the process
    if (!t.destroyed) {
      if (this.corked) {
        this.corked = false;
        t.uncork();
      }
      if (t.writableEnded || this.flushTimeoutMs <= 0) {
        t.destroy();
      } else {
        const timer = setTimeout(() => t.destroy(), this.flushTimeoutMs);
        timer.unref?.();
        t.end(() => {
          clearTimeout(timer);
          t.destroy();
        });
      }
    }
    this.emit('close', error ?? undefined);
  }
}

const EMPTY = Buffer.alloc(0);

function ignore(): void {}
