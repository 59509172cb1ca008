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
    listen: notificationListener(connectionString, schema),
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

/**
 * Every LISTEN of a store on one connection outside the pool (a pooled one would be handed to
 * queries), opened with the first channel and closed with the last; reconnected after a loss,
 * when every listener is called once (what was sent meanwhile is missed).
 */
function notificationListener(connectionString: string, schema: string | undefined) {
  const wanted = schema ?? 'public';
  const listeners = new Map<string, Set<() => void>>();
  /** The connection in use (or being opened): a lost or ended older one changes nothing. */
  let active: { client: pg.Client; ready: Promise<pg.Client> } | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = (): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: 3000 });
    client.on('notification', (message) => {
      if (message.payload === wanted) for (const onNotify of listeners.get(message.channel) ?? []) onNotify();
    });
    const lost = () => {
      if (active?.client !== client) return;
      active = undefined;
      void client.end().catch(() => {});
      if (listeners.size === 0) return;
      // back: what was missed meanwhile is caught up by one more call of each listener
      retry = setTimeout(() => {
        connection().then(() => [...listeners.values()].forEach((set) => set.forEach((onNotify) => onNotify())), () => {});
      }, RELISTEN_DELAY_MS);
      retry.unref();
    };
    client.on('error', lost);
    client.once('end', lost);
    const ready = (async () => {
      try {
        await client.connect();
        for (const channel of listeners.keys()) await client.query(`LISTEN ${channel}`);
      } catch (error) {
        lost();
        throw error;
      }
      return client;
    })();
    active = { client, ready };
    return ready;
  };
  const connection = (): Promise<pg.Client> => active?.ready ?? connect();

  /** True when it was the channel's last listener. */
  const forget = (channel: string, onNotify: () => void): boolean => {
    const set = listeners.get(channel);
    set?.delete(onNotify);
    if (set?.size !== 0) return false;
    listeners.delete(channel);
    if (listeners.size > 0) return true;
    clearTimeout(retry);
    const closing = active;
    active = undefined;
    void closing?.ready.then((client) => client.end(), () => {}).catch(() => {});
    return true;
  };

  return async (channel: string, onNotify: () => void): Promise<() => Promise<void>> => {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    const set = listeners.get(channel) ?? new Set();
    const first = set.size === 0;
    set.add(onNotify);
    listeners.set(channel, set);
    try {
      // a new connection LISTENs every channel known by then, this one included
      const opening = active === undefined;
      const client = await connection();
      if (first && !opening) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      forget(channel, onNotify); // the caller knows: no retrying behind its back
      throw error;
    }
    return async () => {
      if (!forget(channel, onNotify) || !active) return;
      await active.ready.then((client) => client.query(`UNLISTEN ${channel}`)).catch(() => {});
    };
  };
}
