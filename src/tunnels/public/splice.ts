// Bytes both ways between a public connection and a proxy stream.
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream';

/**
 * Pipes `a` into `b` and `b` into `a`. Backpressure is pipe()'s: a reader is paused while the
 * other side's write() returns false, so each direction holds at most the two streams' own
 * buffers (a socket's 16 KiB, a muxado stream's one window), whatever the speeds.
 * Half-closes pass through (a's end → b.end(), and back). Either side failing destroys both.
 * `done` runs once, when both directions are over (error or not); both are destroyed then.
 */
export function splice(a: Duplex, b: Duplex, done: (error?: Error) => void): void {
  let open = 2;
  let failure: Error | undefined;
  const finish = (error?: Error | null) => {
    if (error && !failure) {
      failure = error;
      a.destroy();
      b.destroy();
    }
    if (--open > 0) return;
    a.destroy();
    b.destroy();
    done(failure);
  };
  pipeline(a, b, finish);
  pipeline(b, a, finish);
}
