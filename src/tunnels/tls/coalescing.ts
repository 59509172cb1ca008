/**
 * `task` wrapped so that it never runs concurrently with itself, and calls that come while it
 * runs share one more run after it (a burst of triggers is two runs, not one per trigger).
 */
export function coalescing(task: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await task();
      } while (again);
    })().finally(() => (running = undefined));
    return running;
  };
}
