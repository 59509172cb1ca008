/** The store's contract, shared by db.ts and the two dialects (kept apart so nothing imports in a circle). */
import type { Compilable, Kysely } from 'kysely';
import type { PreparedQuery } from './prepared.js';
import type { SchemaTables } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

/** An open database: the query builder plus what differs between the two dialects. */
export interface Store {
  readonly dialect: Dialect;
  readonly db: Kysely<SchemaTables>;
  /** The PostgreSQL schema this store lives in, when not the default. */
  readonly schema?: string | undefined;
  /**
   * Compiles a query once (see prepared.ts) for the hot paths. Its writes are durable when they
   * resolve; on SQLite they are group-committed with the other writes of the same moment.
   */
  prepare<Row>(query: Compilable<Row>): PreparedQuery<Row>;
  /** Resolves once every write committed before the call is on stable storage. */
  durable(): Promise<void>;
  /** Calls `listener` after every query with its kind (select, insert, …), duration and outcome. */
  observeQueries(listener: QueryListener): void;
  /**
   * PostgreSQL only: calls `onNotify` for each NOTIFY on `channel` whose payload is this store's
   * schema, over a connection of its own, reconnected after a loss (what was sent meanwhile is
   * missed: callers check periodically too). Resolves once listening, with how to stop.
   */
  listen?(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  /** Throws when the database cannot answer a trivial query right now. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type QueryListener = (kind: string, durationMs: number, failed: boolean) => void;

export interface StoreOptions {
  poolSize?: number;
  statementTimeoutMs?: number;
  /** SQLite: refuse to create the file (read-only CLI commands); PostgreSQL never creates one. */
  mustExist?: boolean;
}
