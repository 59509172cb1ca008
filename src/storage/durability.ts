import { open } from 'node:fs/promises';

/**
 * Group commit for SQLite. Commits run with `synchronous=NORMAL`, which writes each transaction
 * to the WAL (so it survives a killed process) without an fsync; before a write is answered,
 * `flush()` fdatasyncs the WAL so it also survives a power cut. The fdatasync runs on libuv's
 * thread pool, off the event loop, and every write committed while one is waiting shares the
 * next one, so a burst of N writes costs about two fsyncs instead of N.
 */
export class WalSyncBarrier {
  private inFlight: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly walPath: string) {}

  /** Resolves once every transaction committed before this call is on stable storage. */
  flush(): Promise<void> {
    // A sync already running may have started before our commit: wait for the next one.
    if (this.queued) return this.queued;
    if (!this.inFlight) return (this.inFlight = this.run());
    this.queued = this.inFlight.then(
      () => this.startQueued(),
      () => this.startQueued(),
    );
    return this.queued;
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.inFlight, this.queued]);
  }

  private startQueued(): Promise<void> {
    this.queued = undefined;
    return (this.inFlight = this.run());
  }

  private async run(): Promise<void> {
    try {
      // Opened anew each time: SQLite may delete and recreate the WAL file, and a kept
      // handle would then sync a file nobody writes to any more.
      const handle = await open(this.walPath, 'r');
      try {
        await handle.datasync();
      } finally {
        await handle.close();
      }
    } finally {
      this.inFlight = undefined;
    }
  }
}
