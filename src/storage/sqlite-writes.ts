import type Database from 'better-sqlite3';

/**
 * Group commit for SQLite writes: the writes that arrive within one turn of the event loop run
 * in one transaction, followed by one fdatasync of the WAL (`flushWal`), and each is answered
 * only after that. A commit costs more than a small write, so a burst of N writes costs about
 * one commit instead of N. Should one write fail, the batch is rolled back and its writes are
 * retried one by one, so a failure never affects another request's write.
 */
export class SqliteWriteQueue {
  private queue: Pending[] = [];
  private scheduled = false;
  /** The WAL flush of the last batch, while it runs. */
  private syncing: Promise<void> | undefined;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;

  constructor(
    private readonly database: Database.Database,
    private readonly flushWal: () => Promise<void>,
  ) {
    this.begin = database.prepare('BEGIN IMMEDIATE');
    this.commit = database.prepare('COMMIT');
    this.rollback = database.prepare('ROLLBACK');
  }

  /** Runs `write` (synchronous statements) inside the next batch; resolves once it is durable. */
  enqueue<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    // A transaction opened through Kysely (migrations, bootstrap) must finish first.
    if (this.database.inTransaction) {
      setImmediate(() => this.flush());
      return;
    }
    // Writes arriving while the previous batch is being flushed could not be answered before the
    // next flush anyway: let them gather, and commit them together when it is done.
    if (this.syncing) {
      void this.syncing.then(() => this.flush());
      return;
    }
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    const outcomes = this.runTogether(batch) ?? batch.map((pending) => this.runAlone(pending));
    const syncing = (this.syncing = this.flushWal().then(
      () => outcomes.forEach((outcome, i) => (outcome.ok ? batch[i]!.resolve(outcome.value) : batch[i]!.reject(outcome.error))),
      (error: unknown) => batch.forEach((pending) => pending.reject(error)),
    ));
    void syncing.finally(() => {
      if (this.syncing === syncing) this.syncing = undefined;
    });
  }

  /** All writes in one transaction; undefined when any failed (nothing of the batch is kept). */
  private runTogether(batch: Pending[]): Outcome[] | undefined {
    if (batch.length === 1) return undefined;
    try {
      this.begin.run();
    } catch {
      return undefined;
    }
    try {
      const outcomes = batch.map((pending): Outcome => ({ ok: true, value: pending.write() }));
      this.commit.run();
      return outcomes;
    } catch {
      if (this.database.inTransaction) this.rollback.run();
      return undefined;
    }
  }

  private runAlone(pending: Pending): Outcome {
    try {
      this.begin.run();
      try {
        const value = pending.write();
        this.commit.run();
        return { ok: true, value };
      } catch (error) {
        if (this.database.inTransaction) this.rollback.run();
        throw error;
      }
    } catch (error) {
      return { ok: false, error };
    }
  }
}

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
