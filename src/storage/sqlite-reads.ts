import type Database from 'better-sqlite3';

/**
 * Reads that arrive within one turn of the event loop run in one read transaction: each
 * statement on its own would take and release SQLite's WAL read lock (file-lock syscalls),
 * which costs more than a primary-key lookup itself. Each read still sees every write that was
 * acknowledged before it arrived.
 */
export class SqliteReadQueue {
  private queue: { read: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }[] = [];
  private scheduled = false;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;

  constructor(private readonly database: Database.Database) {
    this.begin = database.prepare('BEGIN');
    this.commit = database.prepare('COMMIT');
  }

  enqueue<T>(read: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ read, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    // Inside a transaction someone else opened (migrations, bootstrap), just read.
    const own = batch.length > 1 && !this.database.inTransaction;
    if (own) this.begin.run();
    try {
      for (const pending of batch) {
        try {
          pending.resolve(pending.read());
        } catch (error) {
          pending.reject(error);
        }
      }
    } finally {
      if (own && this.database.inTransaction) this.commit.run();
    }
  }
}
