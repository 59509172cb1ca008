/**
 * Heartbeats (AGENT-PROTOCOL.md §4): the opener of a heartbeat stream (type 0xFFFFFFFF) writes
 * 4 random bytes, the other side echoes them, repeat. burrow echoes the agent's stream and runs
 * its own heartbeat towards the agent (the only way to reap RS sessions whose `close()` leaves
 * TLS open).
 */
import { randomBytes } from 'node:crypto';
import { MuxErrorCode, type ProtocolStream, type StreamSession } from './stream-session.js';
import { StreamReader } from './stream-reader.js';
import { StreamType, encodeStreamType } from './stream-types.js';

const BEAT = 4;
const NOTHING = Buffer.alloc(0);
/** Heartbeat streams an agent may hold open at once (both agent families open one); more are refused. */
export const MAX_AGENT_HEARTBEAT_STREAMS = 2;

/**
 * Echoes an agent-opened heartbeat stream (its type already read by `reader`) until the agent
 * half-closes (then FIN back) or the stream dies. Both agent families wait for the echo before
 * their next beat, so one echo is ever in flight; beats that arrive while it is still unsent (a
 * peer that writes beats without reading) are coalesced: only the latest is echoed once it is,
 * so a flood of beats costs one 4-byte write at a time, never a queue of them.
 */
export async function echoHeartbeats(stream: ProtocolStream, reader: StreamReader = new StreamReader(stream)): Promise<void> {
  let partial = NOTHING;
  let inFlight = false;
  let latest: Buffer | null = null;
  const echo = (beat: Buffer): void => {
    if (stream.destroyed || stream.writableEnded) return;
    if (inFlight) {
      latest = beat;
      return;
    }
    inFlight = true;
    stream.write(beat, () => {
      inFlight = false;
      const next = latest;
      latest = null;
      if (next !== null) echo(next);
    });
  };
  try {
    for (;;) {
      const chunk = await reader.next();
      if (chunk === null) break;
      const bytes = partial.length === 0 ? chunk : Buffer.concat([partial, chunk]);
      const whole = bytes.length - (bytes.length % BEAT);
      // a copy: the chunk may be a slice of a large transport read, which must not be retained
      if (whole > 0) echo(Buffer.from(bytes.subarray(whole - BEAT, whole)));
      partial = whole === bytes.length ? NOTHING : Buffer.from(bytes.subarray(whole));
    }
  } catch {
    return; // the stream was reset or destroyed
  }
  // half-closed (in the middle of a beat or not): what was whole has been echoed; FIN back
  if (!stream.destroyed && !stream.writableEnded) stream.end();
}

export type HeartbeatFailure = 'timeout' | 'mismatch' | 'closed';

export interface HeartbeaterOptions {
  /** Time between the sends of two beats. Default 10 000 ms. */
  intervalMs?: number;
  /**
   * Time the agent has to echo a beat. Default 20 000 ms, so an agent is given up
   * `interval + tolerance` = 30 s after its last answer (TUNNELS.md §2).
   */
  toleranceMs?: number;
  /** Called once when the agent stops answering (or answers wrongly, or the stream dies). */
  onTimeout: (reason: HeartbeatFailure) => void;
  /** Called with each round-trip time. */
  onLatency?: (ms: number) => void;
  /** Source of the 4 bytes of each beat (tests). */
  random?: () => Buffer;
}

/** Server-side heartbeat: one stream to the agent, one beat outstanding at a time. */
export class Heartbeater {
  private readonly intervalMs: number;
  private readonly toleranceMs: number;
  private readonly random: () => Buffer;
  private stream: ProtocolStream | null = null;
  private outstanding: Buffer | null = null;
  private sentAt = 0;
  private deadline: NodeJS.Timeout | undefined;
  private next: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Round-trip time of the last answered beat, ms. */
  lastLatencyMs: number | null = null;
  /** Beats answered so far. */
  answered = 0;

  constructor(
    private readonly session: StreamSession,
    private readonly opts: HeartbeaterOptions,
  ) {
    this.intervalMs = opts.intervalMs ?? 10_000;
    this.toleranceMs = opts.toleranceMs ?? 20_000;
    this.random = opts.random ?? (() => randomBytes(BEAT));
  }

  /** Opens the stream and sends the first beat at once (as RS does). */
  start(): void {
    if (this.stream || this.stopped) return;
    const stream = this.session.open();
    this.stream = stream;
    stream.on('error', () => {});
    const reader = new StreamReader(stream);
    this.send(encodeStreamType(StreamType.Heartbeat));
    void this.readLoop(reader);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.deadline);
    clearTimeout(this.next);
    // RST, not FIN: RS's responder (muxado heartbeat.rs `start_responder`) treats a 0-byte
    // read at EOF as a beat and writes 4 zero bytes in a loop until a write fails.
    const s = this.stream;
    if (s && !s.destroyed) s.reset(MuxErrorCode.StreamCancelled);
  }

  private send(prefix?: Buffer): void {
    if (this.stopped || !this.stream) return;
    const beat = this.random();
    this.outstanding = Buffer.from(beat.subarray(0, BEAT));
    this.sentAt = performance.now();
    this.stream.write(prefix ? Buffer.concat([prefix, this.outstanding]) : this.outstanding);
    this.deadline = setTimeout(() => this.fail('timeout'), this.toleranceMs);
  }

  private async readLoop(reader: StreamReader): Promise<void> {
    try {
      for (;;) {
        const echo = await reader.readExact(BEAT);
        if (this.stopped) return;
        if (echo === null) return this.fail('closed');
        if (this.outstanding === null || !echo.equals(this.outstanding)) return this.fail('mismatch');
        clearTimeout(this.deadline);
        const latency = performance.now() - this.sentAt;
        this.outstanding = null;
        this.lastLatencyMs = latency;
        this.answered++;
        this.opts.onLatency?.(latency);
        this.next = setTimeout(() => this.send(), Math.max(0, this.intervalMs - latency));
      }
    } catch {
      this.fail('closed');
    }
  }

  private fail(reason: HeartbeatFailure): void {
    if (this.stopped) return;
    this.stop();
    this.opts.onTimeout(reason);
  }
}
