import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type LogEvent, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import { WalSyncBarrier } from './durability.js';
import type { SchemaTables } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

/** An open database: the query builder plus what differs between the two dialects. */
export interface Store {
  readonly dialect: Dialect;
  readonly db: Kysely<SchemaTables>;
  /** The PostgreSQL schema this store lives in, when not the default. */
  readonly schema?: string | undefined;
  /** Resolves once every write committed before the call is on stable storage. */
  durable(): Promise<void>;
  /** Calls `listener` after every query with its kind (select, insert, …), duration and outcome. */
  observeQueries(listener: QueryListener): void;
  /** Throws when the database cannot answer a trivial query right now. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type QueryListener = (kind: string, durationMs: number, failed: boolean) => void;

export interface StoreOptions {
  poolSize?: number;
  statementTimeoutMs?: number;
}

export function openStore(url: string, options: StoreOptions = {}): Store {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url, options);
  if (url === 'sqlite::memory:') return openSqlite(':memory:');
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length));
  throw new Error(`Unsupported DATABASE_URL scheme: ${url.split(':')[0]}`);
}

function openSqlite(path: string): Store {
  const inMemory = path === ':memory:';
  const file = inMemory ? path : resolve(path);
  if (!inMemory) mkdirSync(dirname(file), { recursive: true });
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  // NORMAL + an explicit fdatasync of the WAL before answering (WalSyncBarrier) is as durable
  // as FULL but lets concurrent writes share one fsync, off the event loop.
  database.pragma('synchronous = NORMAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  const barrier = inMemory ? undefined : new WalSyncBarrier(`${file}-wal`);
  const queries = new QueryObservers();
  const db = new Kysely<SchemaTables>({ dialect: new SqliteDialect({ database: withStatementCache(database) }), log: queries.log });
  return {
    dialect: 'sqlite',
    db,
    observeQueries: (listener) => queries.add(listener),
    durable: () => barrier?.flush() ?? Promise.resolve(),
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

function openPostgres(url: string, options: StoreOptions): Store {
  const { connectionString, schema } = splitSchema(url);
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs || undefined,
    query_timeout: options.statementTimeoutMs ? options.statementTimeoutMs + 1000 : undefined,
    options: schema ? `-c search_path=${schema}` : undefined,
  });
  // A connection lost while idle, or while checked out between queries, is reported by pg as an
  // 'error' event; unheard, that would crash the process. The next query on it fails instead,
  // and that failure is answered 503.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const queries = new QueryObservers();
  const db = new Kysely<SchemaTables>({ dialect: new PostgresDialect({ pool }), log: queries.log });
  return {
    dialect: 'postgres',
    db,
    observeQueries: (listener) => queries.add(listener),
    schema,
    durable: () => Promise.resolve(),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

/** `?schema=name` selects a PostgreSQL schema (created by the migrator); pg itself does not know it. */
export function splitSchema(url: string): { connectionString: string; schema: string | undefined } {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error('The schema parameter of DATABASE_URL must be a lower-case SQL identifier.');
  }
  return { connectionString: parsed.toString(), schema };
}

/** Fans Kysely's per-query log events out to listeners (metrics), naming the statement kind only. */
class QueryObservers {
  private readonly listeners: QueryListener[] = [];

  add(listener: QueryListener): void {
    this.listeners.push(listener);
  }

  readonly log = (event: LogEvent): void => {
    if (this.listeners.length === 0) return;
    const node = event.query.query.kind;
    const kind = node.endsWith('QueryNode') ? node.slice(0, -'QueryNode'.length).toLowerCase() : 'raw';
    for (const listener of this.listeners) listener(kind, event.queryDurationMillis, event.level === 'error');
  };
}
