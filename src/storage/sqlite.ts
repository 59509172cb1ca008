import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, type Compilable, type SqliteDatabase } from 'kysely';
import type { Store, StoreOptions } from './types.js';
import { QueryObservers } from './query-observers.js';
import { WalSyncBarrier } from './durability.js';
import { compileTemplate, type PreparedQuery } from './prepared.js';
import type { SchemaTables } from './schema.js';
import { SqliteReadQueue } from './sqlite-reads.js';
import { SqliteWriteQueue } from './sqlite-writes.js';

export function openSqlite(path: string, options: Pick<StoreOptions, 'mustExist'> = {}): Store {
  const inMemory = path === ':memory:';
  const file = inMemory ? path : resolve(path);
  if (!inMemory && options.mustExist && !existsSync(file)) {
    throw new Error(`there is no database at ${file} (burrow serve or burrow migrate creates it)`);
  }
  if (!inMemory) {
    makeDirectories(dirname(file));
    // a new database is the owner's alone (its WAL and shared-memory files take its mode)
    if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  }
  const database = new Database(file, { fileMustExist: options.mustExist === true });
  database.pragma('journal_mode = WAL');
  // NORMAL + an explicit fdatasync of the WAL before answering (WalSyncBarrier) is as durable
  // as FULL but lets concurrent writes share one fsync, off the event loop.
  database.pragma('synchronous = NORMAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  const barrier = inMemory ? undefined : new WalSyncBarrier(`${file}-wal`);
  const durable = () => barrier?.flush() ?? Promise.resolve();
  const writes = new SqliteWriteQueue(database, durable);
  const reads = new SqliteReadQueue(database);
  const queries = new QueryObservers();
  const db = new Kysely<SchemaTables>({ dialect: new SqliteDialect({ database: withStatementCache(database) }), log: queries.log });

  // A read runs exactly once: timed where it runs, synchronously, since a promise per query
  // only to observe it would cost more than the lookup.
  const timedRead = <T>(kind: string, work: () => T): T => {
    if (!queries.active) return work();
    const started = performance.now();
    try {
      const value = work();
      queries.notify(kind, performance.now() - started, false);
      return value;
    } catch (error) {
      queries.notify(kind, performance.now() - started, true);
      throw error;
    }
  };
  // A write may run twice (its batch rolled back, then alone): observed once, when it settles,
  // from the moment it was queued until it is durable.
  const observedWrite = <T>(kind: string, work: () => T): Promise<T> => {
    if (!queries.active) return writes.enqueue(work);
    const started = performance.now();
    return writes.enqueue(work).then(
      (value) => (queries.notify(kind, performance.now() - started, false), value),
      (error: unknown) => {
        queries.notify(kind, performance.now() - started, true);
        throw error;
      },
    );
  };

  const prepare = <Row>(query: Compilable<Row>): PreparedQuery<Row> => {
    const template = compileTemplate(query);
    const statement = database.prepare(template.sql);
    // Each waits for the batch of its kind (sqlite-reads.ts, sqlite-writes.ts).
    const execute = <T>(work: () => T): Promise<T> =>
      template.writes ? observedWrite(template.kind, work) : reads.enqueue(() => timedRead(template.kind, work));
    return {
      all: (values) => execute(() => statement.all(template.bind(values)) as Row[]),
      first: (values) => execute(() => statement.get(template.bind(values)) as Row | undefined),
      run: (values) => execute(() => statement.run(template.bind(values)).changes),
    };
  };

  return {
    dialect: 'sqlite',
    db,
    prepare,
    observeQueries: (listener) => queries.add(listener),
    durable,
    ping: async () => {
      database.prepare('select 1').get();
    },
    close: async () => {
      await barrier?.close();
      await db.destroy();
    },
  };
}

/**
 * mkdir -p (each new level 0700: the database's directory is nobody else's), one level at a time: Node's recursive mkdir never returns on some paths (under /proc
 * it retries forever), and a missing level should fail with its own name.
 */
function makeDirectories(directory: string): void {
  if (existsSync(directory)) return;
  const parent = dirname(directory);
  if (parent !== directory) makeDirectories(parent);
  try {
    // only the directories made here: an existing one keeps the mode its owner gave it
    mkdirSync(directory, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw new Error(`cannot create the directory ${directory} (${code ?? String(error)})`);
  }
}

/**
 * Kysely prepares every query anew; better-sqlite3 statements can be reused, and preparing is a
 * measurable share of a request. The cache is bounded because SQL text depends on list lengths.
 */
function withStatementCache(database: Database.Database): SqliteDatabase {
  const cache = new Map<string, Database.Statement>();
  const prepare = (source: string) => {
    let statement = cache.get(source);
    if (!statement) {
      if (cache.size >= 500) cache.clear();
      statement = database.prepare(source);
      cache.set(source, statement);
    }
    return statement;
  };
  return { prepare, close: () => database.close() };
}
