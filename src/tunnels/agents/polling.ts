/** A notification source: calls `onChange` when there may be work; resolves with how to stop. */
export type Watch = (onChange: () => void) => Promise<() => Promise<void>>;

export interface Polling {
  start(): void;
  stop(): void;
  /** Runs `work` now; during a round, once more right after it (what woke us may be past its read). */
  wake(): void;
}

/**
 * Runs `work` every `intervalMs` (unref'd: it never keeps the process alive), never two at once:
 * a slow round makes the next tick skip rather than pile up. With `watch`, a notification wakes
 * it at once; the interval stays, for what a notification misses. A watch that cannot start is
 * reported to `onWatchError` and polling goes on.
 */
export function polling(intervalMs: number, work: () => Promise<void>, watch?: Watch, onWatchError?: (error: unknown) => void): Polling {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let stopped = true;
  let unwatch: (() => Promise<void>) | undefined;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      do {
        again = false;
        await work();
      } while (again && !stopped);
    } finally {
      running = false;
    }
  };
  const self: Polling = {
    start() {
      stopped = false;
      timer = setInterval(() => void tick(), intervalMs);
      timer.unref();
      watch?.(() => self.wake()).then(
        (stop) => (stopped ? void stop() : (unwatch = stop)),
        (error: unknown) => onWatchError?.(error),
      );
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      void unwatch?.();
      unwatch = undefined;
    },
    wake() {
      if (stopped) return;
      if (running) again = true;
      else void tick();
    },
  };
  return self;
}
