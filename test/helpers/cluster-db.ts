import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The cluster suites' PostgreSQL (CLUSTER.md §4): they need one whatever the pass, so they bring
 * their own (a schema of postgres://…/test, or CLUSTER_TEST_DATABASE_URL) and run once per CI run,
 * in the SQLite pass; the PostgreSQL pass skips them, and so does a machine without PostgreSQL,
 * each saying why.
 */
export const clusterDatabase = process.env.CLUSTER_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why a cluster suite does not run here (printed), or false. */
export async function clusterSkipReason(suite: string): Promise<string | false> {
  const reason = await unreachable();
  if (reason) console.log(`# ${suite} skipped: ${reason}`);
  return reason;
}

async function unreachable(): Promise<string | false> {
  if (process.env.TEST_DATABASE_URL && !process.env.CLUSTER_TEST_DATABASE_URL) return 'runs once per CI run, in the SQLite pass (it brings its own PostgreSQL schema)';
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
