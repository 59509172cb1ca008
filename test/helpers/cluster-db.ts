import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import pg from 'pg';
import { openStore, type Store } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';

/**
 * The cluster suites' PostgreSQL (CLUSTER.md §4): they need one whatever the pass, so they bring
 * their own (a schema of postgres://…/test, or CLUSTER_TEST_DATABASE_URL, not TEST_DATABASE_URL's)
 * and run once per CI run, in the PostgreSQL pass (their `// @test-pass postgres` line, which has
 * time to spare); run directly on a machine without PostgreSQL, they skip, saying why.
 */
export const clusterDatabase = process.env.CLUSTER_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why a cluster suite does not run here (printed), or false. */
export async function clusterSkipReason(suite: string): Promise<string | false> {
  const reason = await unreachable();
  if (reason) console.log(`# ${suite} skipped: ${reason}`);
  return reason;
}

async function unreachable(): Promise<string | false> {
  const client = new pg.Client({ connectionString: clusterDatabase, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return false;
  } catch (error) {
    return `PostgreSQL unreachable at ${clusterDatabase}: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => {});
  }
}

/** A fresh schema's URL; `drop()` removes it. */
export function clusterSchema(prefix: string): { url: string; name: string; drop(): Promise<void> } {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const url = new URL(clusterDatabase);
  url.searchParams.set('schema', name);
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: clusterDatabase });
      await client.connect();
      await client.query(`drop schema if exists ${name} cascade`);
      await client.end();
    },
  };
}

/**
 * Two migrated stores, each on a fresh schema, for a suite checking that one schema's
 * notifications reach its own watchers and not the other's. Opened before the suite; after it,
 * the watchers in `stops` are stopped, the stores closed and the schemas dropped.
 */
export function migratedSchemaPair(prefix: string): { readonly store: Store; readonly other: Store; readonly stops: (() => Promise<void>)[] } {
  const schemas = [clusterSchema(`${prefix}1`), clusterSchema(`${prefix}2`)] as const;
  let stores: [Store, Store] | undefined;
  const opened = (): [Store, Store] => {
    if (!stores) throw new Error('the stores are opened before the suite runs');
    return stores;
  };
  const stops: (() => Promise<void>)[] = [];
  before(async () => {
    stores = [openStore(schemas[0].url), openStore(schemas[1].url)];
    for (const store of stores) await migrateToLatest(store);
  });
  after(async () => {
    for (const stop of stops) await stop();
    for (const store of stores ?? []) await store.close();
    for (const schema of schemas) await schema.drop();
  });
  return {
    get store() {
      return opened()[0];
    },
    get other() {
      return opened()[1];
    },
    stops,
  };
}

/** Waits up to `ms` for `check`; resolves with the milliseconds it took. */
export async function waitedFor(check: () => boolean, ms: number): Promise<number> {
  const started = performance.now();
  while (!check() && performance.now() - started < ms) await new Promise((resolve) => setTimeout(resolve, 2));
  return Math.round(performance.now() - started);
}
