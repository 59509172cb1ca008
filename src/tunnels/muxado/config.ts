import { DEFAULT_WINDOW, MAX_PAYLOAD, MAX_WNDINC } from './frame.js';

/** Queued-but-unsent bytes on a backpressured transport past which a peer that keeps sending (frames we must answer, or any input) is cut off. */
export const MAX_CONTROL_BACKLOG = 1 << 20;

/** How a `MuxadoSession` behaves; every field but `side` has a default (`MUXADO_DEFAULTS`). */
export interface MuxadoOptions {
  /** server: opens even ids starting at 2; client: odd starting at 3. */
  side: 'server' | 'client';
  /** Per stream, each direction. Default 256 KiB (0x40000), what both agent families assume. */
  windowSize?: number;
  /** Concurrent peer-opened streams; a SYN past it gets RST AcceptQueueFull and the session stays. Default 256. */
  maxIncomingStreams?: number;
  /** Largest incoming DATA payload; bigger → GOAWAY FrameSize and close. Default 2^24 − 1 (the field's maximum): the window bounds DATA anyway. */
  maxFrameSize?: number;
  /** Largest DATA payload we send in one frame. Default 64 KiB (bounded by the window anyway). */
  maxSendFrameSize?: number;
  /**
   * Bytes that may queue on the transport before DATA frames wait for its 'drain'. Default 0: as
   * soon as the transport's write() says so (its own high-water mark: 16 KiB on a TLS socket,
   * which holds a bulk stream to about one 16 KiB frame per event-loop turn). At most 256 KiB.
   */
  transportBuffer?: number;
  /** Skip incoming frames of a type above 3 instead of GOAWAY Protocol + close. Default false. */
  ignoreUnknownFrameTypes?: boolean;
  /** After close(), how long queued frames (e.g. a GOAWAY) may take to flush before the transport is destroyed. Default 2000 ms. */
  closeFlushTimeoutMs?: number;
  /**
   * When input makes us write nothing, write a 1-byte WNDINC so the kernel's ACK leaves at once
   * instead of after the delayed-ACK timer: a peer with Nagle on (ngrok-rust never sets
   * TCP_NODELAY) holds its next small write until that ACK. Default false. See README.md.
   */
  nudgeAcks?: boolean;
}

/** The options with every default filled in. */
export type MuxadoConfig = Readonly<Required<MuxadoOptions>>;

export const MUXADO_DEFAULTS: Readonly<Omit<MuxadoConfig, 'side'>> = Object.freeze({
  windowSize: DEFAULT_WINDOW,
  maxIncomingStreams: 256,
  maxFrameSize: MAX_PAYLOAD,
  maxSendFrameSize: 65536,
  transportBuffer: 0,
  ignoreUnknownFrameTypes: false,
  closeFlushTimeoutMs: 2000,
  nudgeAcks: false,
});

/**
 * The options with their defaults, checked: a value the session could not honour (a window the
 * WNDINC field cannot grant, a frame larger than the length field, a count or time that is not a
 * positive integer) is a RangeError naming it, at construction rather than mid-session.
 */
export function muxadoConfig(options: MuxadoOptions): MuxadoConfig {
  const defined = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const config: MuxadoConfig = Object.freeze({ ...MUXADO_DEFAULTS, ...defined, side: options.side });
  if (config.side !== 'server' && config.side !== 'client') throw new RangeError(`muxado: bad side ${String(config.side)}`);
  inRange('windowSize', config.windowSize, 1, MAX_WNDINC);
  inRange('maxIncomingStreams', config.maxIncomingStreams, 1, Number.MAX_SAFE_INTEGER);
  inRange('maxFrameSize', config.maxFrameSize, 1, MAX_PAYLOAD);
  inRange('maxSendFrameSize', config.maxSendFrameSize, 1, MAX_PAYLOAD);
  // well under the backlog that cuts a peer off: DATA stops at this, control frames may go past it
  inRange('transportBuffer', config.transportBuffer, 0, MAX_CONTROL_BACKLOG / 4);
  inRange('closeFlushTimeoutMs', config.closeFlushTimeoutMs, 0, 2 ** 31 - 1);
  return config;
}

function inRange(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(`muxado: bad ${name} ${value} (an integer from ${min} to ${max})`);
}
