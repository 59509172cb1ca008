/**
 * Incremental muxado frame decoder. Accepts the byte stream in chunks of any size and calls a
 * {@link FrameSink} for each frame. DATA payloads are streamed: delivered as `subarray`s of the
 * input chunks as they arrive, never buffered or copied here, so a frame split over several
 * TCP/TLS reads costs no concatenation. Control frames (RST, WNDINC, GOAWAY) are small and are
 * assembled in a scratch buffer when they straddle chunks.
 */
import { ErrorCode, FrameType, HEADER_SIZE, MAX_PAYLOAD, STREAM_ID_MASK, type Frame } from './frame.js';

export interface FrameSink {
  /** A DATA header. `onDataChunk` follows for each piece of the payload, then `onDataEnd` (also for an empty payload). */
  onDataStart(streamId: number, flags: number, length: number): void;
  onDataChunk(chunk: Buffer): void;
  onDataEnd(): void;
  onRst(streamId: number, code: number): void;
  onWndInc(streamId: number, increment: number): void;
  /** Terminal: the decoder stops itself before calling this and parses nothing after it (unless `continueAfterGoAway`). */
  onGoAway(lastStreamId: number, code: number, debug: Buffer): void;
  /** Malformed input. The decoder has stopped; `code` is the GOAWAY code to answer with. */
  onError(code: number, message: string): void;
}

export interface DecoderOptions {
  /** Largest DATA payload accepted; bigger → `onError(FrameSize)`. Default and maximum: 2^24 − 1. */
  maxFrameSize?: number;
  /** Skip frames of a type above 3 instead of reporting a protocol error (muxado-go's behaviour). Default false. */
  ignoreUnknownTypes?: boolean;
  /**
   * Trust a GOAWAY's length and keep decoding after it (for test peers and tools looking at what a
   * session sends). Default false: a GOAWAY is terminal and its length is not trusted.
   */
  continueAfterGoAway?: boolean;
}

/** At most this much of a GOAWAY's debug text is read; the frame is terminal anyway. */
export const MAX_GOAWAY_DEBUG = 4096;

const enum State {
  Header,
  Data,
  Skip,
  Control,
}

export class FrameDecoder {
  private readonly sink: FrameSink;
  private readonly maxFrameSize: number;
  private readonly ignoreUnknownTypes: boolean;
  private readonly continueAfterGoAway: boolean;
  private stopped = false;
  private state = State.Header;
  /** Partial header (only used when a header straddles chunks). */
  private readonly hdr = Buffer.allocUnsafe(HEADER_SIZE);
  private hdrLen = 0;
  /** Payload bytes still to come for Data / Skip. */
  private remaining = 0;
  /** Control frame being assembled. */
  private ctlType = 0;
  private ctlStreamId = 0;
  private ctlBuf: Buffer = Buffer.allocUnsafe(8);
  private ctlHave = 0;
  private ctlNeed = 0;

  constructor(sink: FrameSink, options: DecoderOptions = {}) {
    this.sink = sink;
    this.maxFrameSize = Math.min(options.maxFrameSize ?? MAX_PAYLOAD, MAX_PAYLOAD);
    this.ignoreUnknownTypes = options.ignoreUnknownTypes ?? false;
    this.continueAfterGoAway = options.continueAfterGoAway ?? false;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Stops decoding for good; later `push`es are ignored. */
  stop(): void {
    this.stopped = true;
  }

  push(chunk: Buffer): void {
    const len = chunk.length;
    let off = 0;
    while (off < len && !this.stopped) {
      switch (this.state) {
        case State.Data: {
          const n = Math.min(this.remaining, len - off);
          const part = off === 0 && n === len ? chunk : chunk.subarray(off, off + n);
          off += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = State.Header;
          this.sink.onDataChunk(part);
          if (this.remaining === 0 && !this.stopped) this.sink.onDataEnd();
          break;
        }
        case State.Skip: {
          const n = Math.min(this.remaining, len - off);
          off += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = State.Header;
          break;
        }
        case State.Control: {
          const need = this.ctlNeed - this.ctlHave;
          if (this.ctlHave === 0 && len - off >= need) {
            // whole body in this chunk: no copy
            const at = off;
            off += need;
            this.state = State.Header;
            this.dispatchControl(chunk, at, need);
          } else {
            const n = Math.min(need, len - off);
            chunk.copy(this.ctlBuf, this.ctlHave, off, off + n);
            this.ctlHave += n;
            off += n;
            if (this.ctlHave === this.ctlNeed) {
              this.state = State.Header;
              this.dispatchControl(this.ctlBuf, 0, this.ctlNeed);
            }
          }
          break;
        }
        case State.Header: {
          if (this.hdrLen === 0 && len - off >= HEADER_SIZE) {
            const at = off;
            off += HEADER_SIZE;
            this.onHeader(chunk, at);
          } else {
            const n = Math.min(HEADER_SIZE - this.hdrLen, len - off);
            chunk.copy(this.hdr, this.hdrLen, off, off + n);
            this.hdrLen += n;
            off += n;
            if (this.hdrLen === HEADER_SIZE) {
              this.hdrLen = 0;
              this.onHeader(this.hdr, 0);
            }
          }
          break;
        }
      }
    }
  }

  private fail(code: number, message: string): void {
    this.stopped = true;
    this.sink.onError(code, message);
  }

  private onHeader(b: Buffer, o: number): void {
    const length = ((b[o] as number) << 16) | ((b[o + 1] as number) << 8) | (b[o + 2] as number);
    const tf = b[o + 3] as number;
    const type = tf >>> 4;
    const flags = tf & 0x0f;
    const streamId = b.readUInt32BE(o + 4) & STREAM_ID_MASK;
    switch (type) {
      case FrameType.Data:
        if (streamId === 0) return this.fail(ErrorCode.Protocol, 'DATA frame on stream 0');
        if (length > this.maxFrameSize) return this.fail(ErrorCode.FrameSize, `DATA frame of ${length} bytes exceeds ${this.maxFrameSize}`);
        this.sink.onDataStart(streamId, flags, length);
        if (this.stopped) return;
        if (length === 0) {
          this.sink.onDataEnd();
        } else {
          this.remaining = length;
          this.state = State.Data;
        }
        return;
      case FrameType.Rst:
      case FrameType.WndInc:
        if (streamId === 0) return this.fail(ErrorCode.Protocol, `${type === FrameType.Rst ? 'RST' : 'WNDINC'} frame on stream 0`);
        if (length !== 4) return this.fail(ErrorCode.FrameSize, `${type === FrameType.Rst ? 'RST' : 'WNDINC'} frame of length ${length}`);
        this.beginControl(type, streamId, 4);
        return;
      case FrameType.GoAway:
        if (this.continueAfterGoAway) {
          if (length < 8 || length > this.maxFrameSize) return this.fail(ErrorCode.FrameSize, `GOAWAY frame of length ${length}`);
          this.beginControl(type, streamId, length);
          return;
        }
        // The length may lie (RS counts only the debug text): read max(8, length) bytes, which
        // both families always send, capped, and stop there.
        this.beginControl(type, streamId, Math.min(Math.max(8, length), 8 + MAX_GOAWAY_DEBUG));
        return;
      default:
        if (this.ignoreUnknownTypes) {
          if (length > 0) {
            this.remaining = length;
            this.state = State.Skip;
          }
          return;
        }
        return this.fail(ErrorCode.Protocol, `unknown frame type ${type}`);
    }
  }

  private beginControl(type: number, streamId: number, need: number): void {
    this.ctlType = type;
    this.ctlStreamId = streamId;
    this.ctlNeed = need;
    this.ctlHave = 0;
    if (this.ctlBuf.length < need) this.ctlBuf = Buffer.allocUnsafe(need);
    this.state = State.Control;
  }

  private dispatchControl(b: Buffer, o: number, n: number): void {
    switch (this.ctlType) {
      case FrameType.Rst:
        this.sink.onRst(this.ctlStreamId, b.readUInt32BE(o));
        return;
      case FrameType.WndInc:
        this.sink.onWndInc(this.ctlStreamId, b.readUInt32BE(o) & STREAM_ID_MASK);
        return;
      default: {
        if (!this.continueAfterGoAway) this.stopped = true;
        const debug = Buffer.from(b.subarray(o + 8, o + n));
        if (this.ctlBuf.length > 8) this.ctlBuf = Buffer.allocUnsafe(8);
        this.sink.onGoAway(b.readUInt32BE(o) & STREAM_ID_MASK, b.readUInt32BE(o + 4), debug);
      }
    }
  }
}

export interface ParseResult {
  frames: Frame[];
  /** Set when the decoder reported malformed input (and stopped). */
  error?: { code: number; message: string };
}

/**
 * Collects whole frames (DATA payloads concatenated), for tests, tools and debugging; not the
 * hot path. A GOAWAY frame's `payload` is its last-stream-id, code and debug text, as read.
 */
export class FrameCollector {
  readonly frames: Frame[] = [];
  error: { code: number; message: string } | undefined;
  private readonly decoder: FrameDecoder;
  private current: Frame | null = null;
  private parts: Buffer[] = [];

  constructor(options: DecoderOptions = {}, onFrame?: (frame: Frame) => void) {
    const self = this;
    const emit = (frame: Frame) => {
      self.frames.push(frame);
      onFrame?.(frame);
    };
    this.decoder = new FrameDecoder(
      {
        onDataStart(streamId, flags, length) {
          self.current = { type: FrameType.Data, flags, streamId, length, payload: Buffer.alloc(0) };
          self.parts = [];
        },
        onDataChunk(chunk) {
          self.parts.push(Buffer.from(chunk));
        },
        onDataEnd() {
          const frame = self.current as Frame;
          frame.payload = Buffer.concat(self.parts);
          self.current = null;
          self.parts = [];
          emit(frame);
        },
        onRst(streamId, code) {
          const payload = Buffer.allocUnsafe(4);
          payload.writeUInt32BE(code);
          emit({ type: FrameType.Rst, flags: 0, streamId, length: 4, payload });
        },
        onWndInc(streamId, increment) {
          const payload = Buffer.allocUnsafe(4);
          payload.writeUInt32BE(increment);
          emit({ type: FrameType.WndInc, flags: 0, streamId, length: 4, payload });
        },
        onGoAway(lastStreamId, code, debug) {
          const payload = Buffer.allocUnsafe(8 + debug.length);
          payload.writeUInt32BE(lastStreamId, 0);
          payload.writeUInt32BE(code, 4);
          debug.copy(payload, 8);
          emit({ type: FrameType.GoAway, flags: 0, streamId: 0, length: payload.length, payload });
        },
        onError(code, message) {
          self.error = { code, message };
        },
      },
      options,
    );
  }

  push(chunk: Buffer): void {
    this.decoder.push(chunk);
  }

  get stopped(): boolean {
    return this.decoder.isStopped;
  }
}

/** Parses a complete byte string into frames. */
export function parseFrames(bytes: Buffer, options: DecoderOptions = {}): ParseResult {
  const c = new FrameCollector(options);
  c.push(bytes);
  return c.error ? { frames: c.frames, error: c.error } : { frames: c.frames };
}
