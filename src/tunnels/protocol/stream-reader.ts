/**
 * Pull-style reads from a stream with deadlines: exactly N bytes (stream types, heartbeats)
 * or one JSON value (RPC bodies). Reads in paused mode, so the multiplexer sees consumption
 * (and grants window) only for what this reader took.
 */
import type { Readable } from 'node:stream';
import { JsonSyntaxError, JsonValueScanner, isAllWhitespace } from './json-scanner.js';

export type ReadErrorKind =
  | 'timeout' // the deadline passed first
  | 'eof' // the peer half-closed before the value / the bytes were complete
  | 'closed' // the stream was reset or destroyed
  | 'oversize' // more than maxBytes before the value ended
  | 'syntax' // not JSON
  | 'trailing'; // something other than whitespace follows the value in the same read

export class StreamReadError extends Error {
  constructor(
    readonly kind: ReadErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'StreamReadError';
  }
}

export interface JsonReadOptions {
  /** Most bytes the value (with leading whitespace) may take. */
  maxBytes: number;
  /** Milliseconds from the call until the whole value must have arrived. */
  timeoutMs: number;
}

export interface JsonReadResult {
  value: unknown;
  /** Bytes of the value as received (without leading or trailing whitespace). */
  bytes: number;
}

const NO_DEADLINE = Number.POSITIVE_INFINITY;

export class StreamReader {
  private readonly pending: Buffer[] = [];
  private ended = false;
  private failure: StreamReadError | null = null;
  private wake: (() => void) | null = null;

  constructor(readonly stream: Readable) {
    const notify = (): void => {
      const w = this.wake;
      this.wake = null;
      w?.();
    };
    stream.on('readable', notify);
    stream.once('end', () => {
      this.ended = true;
      notify();
    });
    stream.on('error', (err: Error) => {
      this.failure ??= new StreamReadError('closed', `stream error: ${err.message}`);
      notify();
    });
    stream.once('close', () => {
      if (!this.ended) this.failure ??= new StreamReadError('closed', 'stream closed before end');
      notify();
    });
  }

  /** True once the peer's FIN was seen and every byte before it has been consumed. */
  get atEnd(): boolean {
    return this.ended && this.pending.length === 0 && this.stream.readableLength === 0;
  }

  /** Returns bytes to the front of the reader (they are read again next). */
  unread(buf: Buffer): void {
    if (buf.length > 0) this.pending.unshift(buf);
  }

  /** The next chunk, or null at end of stream. `deadline` is an absolute `Date.now()` time. */
  async next(deadline: number = NO_DEADLINE): Promise<Buffer | null> {
    for (;;) {
      const p = this.pending.shift();
      if (p !== undefined) return p;
      const c = this.stream.read() as Buffer | string | null;
      if (c !== null) return typeof c === 'string' ? Buffer.from(c) : c;
      if (this.failure) throw this.failure;
      if (this.ended || this.stream.readableEnded) return null;
      if (this.stream.destroyed) throw new StreamReadError('closed', 'stream closed before end');
      await this.waitEvent(deadline);
    }
  }

  /** Exactly `n` bytes; null when the stream ends cleanly before the first of them. */
  async readExact(n: number, deadline: number = NO_DEADLINE): Promise<Buffer | null> {
    const parts: Buffer[] = [];
    let have = 0;
    while (have < n) {
      const c = await this.next(deadline);
      if (c === null) {
        if (have === 0) return null;
        throw new StreamReadError('eof', `stream ended after ${have} of ${n} bytes`);
      }
      const need = n - have;
      if (c.length > need) {
        parts.push(c.subarray(0, need));
        this.unread(c.subarray(need));
        have = n;
      } else {
        parts.push(c);
        have += c.length;
      }
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
  }

  /**
   * One JSON value. Whitespace after it in the same chunk is consumed; any other byte there
   * is a 'trailing' error (two values are never read as one). Bytes arriving later are left
   * in the stream.
   */
  async readJson(opts: JsonReadOptions): Promise<JsonReadResult> {
    const deadline = Date.now() + opts.timeoutMs;
    const scanner = new JsonValueScanner();
    const parts: Buffer[] = [];
    let total = 0;
    for (;;) {
      const c = await this.next(deadline);
      if (c === null) {
        if (scanner.endOfInput()) break;
        throw new StreamReadError('eof', total === 0 ? 'stream ended before a request' : 'stream ended inside the JSON value');
      }
      let end: number;
      try {
        end = scanner.push(c);
      } catch (err) {
        throw new StreamReadError('syntax', (err as JsonSyntaxError).message);
      }
      const used = end < 0 ? c.length : end;
      if (total + used > opts.maxBytes) {
        throw new StreamReadError('oversize', `request larger than ${opts.maxBytes} bytes`);
      }
      parts.push(end < 0 ? c : c.subarray(0, end));
      total += used;
      if (end >= 0) {
        const rest = c.subarray(end);
        if (!isAllWhitespace(rest)) throw new StreamReadError('trailing', 'data after the JSON value');
        break;
      }
    }
    const text = Buffer.concat(parts, total).toString('utf8').trim();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new StreamReadError('syntax', (err as Error).message);
    }
    return { value, bytes: Buffer.byteLength(text) };
  }

  /** Consumes and discards everything until end of stream; resolves false past `limit` bytes. */
  async drain(limit: number, deadline: number = NO_DEADLINE): Promise<boolean> {
    let n = 0;
    for (;;) {
      const c = await this.next(deadline);
      if (c === null) return true;
      n += c.length;
      if (n > limit) return false;
    }
  }

  private waitEvent(deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      if (deadline !== NO_DEADLINE) {
        const ms = deadline - Date.now();
        if (ms <= 0) {
          reject(new StreamReadError('timeout', 'read deadline passed'));
          return;
        }
        timer = setTimeout(() => {
          this.wake = null;
          reject(new StreamReadError('timeout', 'read deadline passed'));
        }, ms);
      }
      this.wake = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
    });
  }
}
