/**
 * Runs `work` every `intervalMs` (unref'd: it never keeps the process alive), never two at once:
 * a slow round makes the next tick skip rather than pile up.
 */
export function polling(intervalMs: number, work: () => Promise<void>): { start(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      await work();
    } finally {
      running = false;
    }
  };
  return {
    start() {
      timer = setInterval(() => void tick(), intervalMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
