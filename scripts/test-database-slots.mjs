// The PostgreSQL pass's databases: one per concurrently running test file ("slot"), created
// beside TEST_DATABASE_URL's database before the run and dropped after it. Each test file's
// process claims a free slot (test-database-slot.mjs), so a file's DDL (its schemas' migrations
// and drops) never races another file's: in one database, Kysely's table check lists every
// schema's tables and failed on a schema another file was dropping.
import pg from 'pg';

/** The slot databases' names: `<database>_w1` … `<database>_w<count>`. */
export function slotNames(databaseUrl, count) {
  const base = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  return Array.from({ length: count }, (_, i) => `${base}_w${i + 1}`);
}

async function withAdmin(databaseUrl, work) {
  const url = new URL(databaseUrl);
  url.search = '';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const quoted = (name) => `"${name.replaceAll('"', '""')}"`;

/** Creates the slots (after dropping any a killed run left); returns the environment that names them. */
export async function createSlots(databaseUrl, count) {
  const names = slotNames(databaseUrl, count);
  await withAdmin(databaseUrl, async (client) => {
    for (const name of names) {
      await client.query(`drop database if exists ${quoted(name)} with (force)`);
      await client.query(`create database ${quoted(name)}`);
    }
  });
  return { BURROW_TEST_DATABASE_SLOTS: String(count) };
}

export async function dropSlots(databaseUrl, count) {
  await withAdmin(databaseUrl, async (client) => {
    for (const name of slotNames(databaseUrl, count)) await client.query(`drop database if exists ${quoted(name)} with (force)`);
  });
}
