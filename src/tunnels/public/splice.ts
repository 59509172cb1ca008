// Bytes both ways between a public connection and a proxy stream.
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { finished } from 'node:stream';

/**
 * Pipes `a` into `b` and `b` into `a`. Backpressure is pipe()'s: a reader is paused while the
 * other side's write() returns false, so each direction holds at most the two streams' own
 * buffers (a socket's 16 or 64 KiB, a muxado stream's one window), whatever the speeds.
 * Half-closes pass through (a's end → b.end(), and back). Either side failing destroys both.
 * `done` runs once, when both directions are over (error or not); both are destroyed then.
 *
 * Built on pipe() and finished() rather than stream.pipeline(): pipeline makes an
 * AbortController per call and aborts it at the end (a DOMException with a stack each), which
 * was 7 % of burrow's CPU on short connections.
 */
export function splice(a: Duplex, b: Duplex, done: (error?: Error) => void): void {
  let open = 2;
  let failure: Error | undefined;
  const fail = (error: Error) => {
    failure ??= error;
    a.destroy();
    b.destroy();
  };
  const directionOver = (error?: Error | null) => {
    if (error) fail(error);
    if (--open > 0) return;
    a.destroy();
    b.destroy();
    done(failure);
  };
  oneWay(a, b, fail, directionOver);
  oneWay(b, a, fail, directionOver);
}

/**
 * Turns Nagle off for `socket` just before the second chunk from `source` is written to it. Linux
 * holds a small segment only while an earlier small one is unacknowledged, so the first write
 * never waits; from the second on, the client's delayed ACK could hold one for 40 ms. A short
 * connection (one answer) thus skips the setsockopt, a syscall that cost as much as the rest of
 * its accept here.
 */
export function noDelayFromSecondWrite(socket: Socket, source: Duplex): void {
  let chunks = 0;
  const onData = () => {
    if (++chunks < 2) return;
    socket.setNoDelay(true);
    source.off('data', onData);
  };
  // before pipe()'s own listener, so the option is set before the write
  source.prependListener('data', onData);
}

/** Write buffer of the public sockets (the TCP, TLS and HTTP ports' servers set it). */
export const SOCKET_BUFFER = 64 * 1024;

/** A chunk this large is likely one of several read in the same turn (TLS records are 16 KiB). */
const BULK_CHUNK = 8 * 1024;

const CORKED = Symbol('corked for this turn');

/**
 * Large chunks arriving in one event-loop turn leave in one writev at its end rather than a
 * write() each: the syscalls of a bulk transfer into a socket fall up to four-fold. Small ones
 * (requests, echoes) are written at once, as before.
 */
export function corkForTurn(to: Duplex & { [CORKED]?: boolean }, chunk: Buffer): void {
  if (chunk.length < BULK_CHUNK || to[CORKED] || to.destroyed) return;
  to[CORKED] = true;
  to.cork();
  setImmediate(() => {
    to[CORKED] = false;
    to.uncork();
  });
}

/** from → to; `over` once `to` has finished writing (from's end passed on) or either failed. */
function oneWay(from: Duplex, to: Duplex, fail: (error: Error) => void, over: (error?: Error | null) => void): void {
  // into a public socket only: the muxado session already batches what goes to the agent per turn
  if (to instanceof Socket && to.writableHighWaterMark >= SOCKET_BUFFER) from.prependListener('data', (chunk: Buffer) => corkForTurn(to, chunk));
  from.pipe(to);
  // a reader that fails or closes before its end: the other side would wait for an end() forever
  finished(from, { writable: false }, (error) => {
    if (error) fail(error);
  });
  finished(to, { readable: false }, over);
}
