/**
 * The minimal view of the stream multiplexer (muxado) that the protocol layer needs.
 * `src/tunnels/muxado/`'s `MuxadoSession` / `MuxadoStream` satisfy it structurally.
 */
import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';

/** One muxado stream: a Duplex whose `end()` sends FIN; `reset(code)` sends RST. */
export interface ProtocolStream extends Duplex {
  readonly id: number;
  reset(code: number): void;
}

/**
 * One muxado session. Events: `'stream'` (s: ProtocolStream) for each agent-opened stream,
 * `'close'` (err?: Error) once, `'goaway'` when the agent sent GOAWAY.
 */
export interface StreamSession extends EventEmitter {
  /** A server-opened stream; its SYN goes out with the first write. */
  open(): ProtocolStream;
  goAway(code?: number, debug?: string): void;
  /** Keeps this turn's queued frames for one more turn, to leave with what the next one adds. */
  holdFlush?(): void;
  close(error?: Error): void;
  /** Bounds the streams and bytes the agent may send until lifted with `null` (muxado's `InputLimit`). */
  limitInput?(limit: { readonly streams: number; readonly bytes: number } | null): void;
  readonly closed: boolean;
}

/** muxado error codes used by this layer (AGENT-PROTOCOL.md §2). */
export const MuxErrorCode = {
  None: 0,
  Protocol: 1,
  Internal: 2,
  StreamRefused: 5,
  StreamCancelled: 6,
  FrameSize: 8,
  AcceptQueueFull: 9,
} as const;
export type MuxErrorCode = (typeof MuxErrorCode)[keyof typeof MuxErrorCode];
