import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect, sql, type Compilable } from 'kysely';
import pg from 'pg';
import type { Store, StoreOptions } from './types.js';
import { QueryObservers } from './query-observers.js';
import { compileTemplate, type PreparedQuery } from './prepared.js';
import type { SchemaTables } from './schema.js';

export function openPostgres(url: string, options: StoreOptions): Store {
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

  const prepare = <Row>(query: Compilable<Row>): PreparedQuery<Row> => {
    const template = compileTemplate(query);
    // A named statement is parsed and planned once per connection, then reused.
    const name = `burrow_${createHash('sha1').update(template.sql).digest('hex').slice(0, 20)}`;
    const execute = async (values: Record<string, unknown>) => {
      const started = performance.now();
      try {
        const result = await pool.query({ name, text: template.sql, values: template.bind(values) });
        queries.notify(template.kind, performance.now() - started, false);
        return result;
      } catch (error) {
        queries.notify(template.kind, performance.now() - started, true);
        throw error;
      }
    };
    return {
      all: async (values) => (await execute(values)).rows as Row[],
      first: async (values) => (await execute(values)).rows[0] as Row | undefined,
      run: async (values) => (await execute(values)).rowCount ?? 0,
    };
  };

  return {
    dialect: 'postgres',
    db,
    schema,
    prepare,
    observeQueries: (listener) => queries.add(listener),
    durable: () => Promise.resolve(),
    listen: (channel, onNotify) => listenFor(connectionString, schema, channel, onNotify),
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

const RELISTEN_DELAY_MS = 1_000;

/** LISTEN on a connection outside the pool (a pooled one would be handed to queries); reconnected after a loss. */
async function listenFor(connectionString: string, schema: string | undefined, channel: string, onNotify: () => void): Promise<() => Promise<void>> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  const wanted = schema ?? 'public';
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString, connectionTimeoutMillis: 3000 });
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload === wanted) onNotify();
    });
    let gone = false;
    const lost = () => {
      if (gone) return;
      gone = true;
      void next.end().catch(() => {});
      if (client === next) client = undefined;
      if (stopped) return;
      // back: what was missed meanwhile is caught up by one more refresh
      retry = setTimeout(() => void connect().then(onNotify, () => {}), RELISTEN_DELAY_MS);
      retry.unref();
    };
    next.on('error', lost);
    next.once('end', lost);
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
    } catch (error) {
      lost();
      throw error;
    }
    client = next;
  };
  await connect().catch((error: unknown) => {
    stopped = true; // the caller knows: no retrying behind its back
    clearTimeout(retry);
    throw error;
  });
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
