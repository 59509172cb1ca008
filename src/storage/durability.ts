import { open, type FileHandle } from 'node:fs/promises';

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
  /**
   * Kept open: SQLite deletes the WAL only when its last connection closes, and this process
   * holds one for as long as the barrier lives. On any error the handle is opened anew.
   */
  private handle: FileHandle | undefined;

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
    await this.handle?.close();
    this.handle = undefined;
  }

  private startQueued(): Promise<void> {
    this.queued = undefined;
    return (this.inFlight = this.run());
  }

  private async run(): Promise<void> {
    try {
      this.handle ??= await open(this.walPath, 'r');
      await this.handle.datasync();
    } catch (error) {
      const stale = this.handle;
      this.handle = undefined;
      await stale?.close().catch(() => {});
      throw error;
    } finally {
      this.inFlight = undefined;
    }
  }
}
