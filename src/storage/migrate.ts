import { Migrator, sql, type MigrationResultSet } from 'kysely';
import type { Store } from './db.js';
import { allMigrations } from './migrations/index.js';

/**
 * Brings the schema up to date. Safe when several instances start at once: on PostgreSQL the
 * migrator holds an advisory lock, and SQLite allows one writer at a time.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  if (store.dialect === 'postgres' && store.schema) await createSchema(store, store.schema);
  const result: MigrationResultSet = await throughCatalogRaces(async () => {
    const attempt = await (await migratorFor(store)).migrateToLatest();
    if (attempt.error) throw attempt.error;
    return attempt;
  });
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** The migrations not applied yet, in order. Only reads: creates no schema, table or file. */
export async function pendingMigrations(store: Store): Promise<string[]> {
  const migrations = await throughCatalogRaces(async () => (await migratorFor(store)).getMigrations());
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/**
 * Kysely's migrator asks whether its table exists by listing every table of every schema
 * (pg_get_serial_sequence on each): a schema that another client drops meanwhile fails that
 * listing with 3F000 "schema … does not exist", though it is not ours. Asked again, it is gone.
 * (Two instances or test files on one database, one cleaning up its schema, met it.)
 */
async function throughCatalogRaces<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if ((error as { code?: string }).code !== '3F000' || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

async function migratorFor(store: Store): Promise<Migrator> {
  return new Migrator({
    db: store.db,
    provider: { getMigrations: async () => allMigrations(store.dialect) },
    // Kysely looks for its bookkeeping tables in every schema unless told which one; with
    // several schemas in one database it would find another's and skip creating its own.
    ...(store.dialect === 'postgres' ? { migrationTableSchema: store.schema ?? (await currentSchema(store)) } : {}),
  });
}

async function createSchema(store: Store, schema: string): Promise<void> {
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(store.db);
  } catch (error) {
    // Two instances creating it at the same moment: one of them loses the race, harmlessly.
    const code = (error as { code?: string }).code;
    if (code !== '23505' && code !== '42P06') throw error;
  }
}

async function currentSchema(store: Store): Promise<string> {
  const result = await sql<{ schema: string }>`select current_schema() as schema`.execute(store.db);
  const schema = result.rows[0]?.schema;
  if (!schema) throw new Error('The PostgreSQL search_path names no existing schema to migrate into.');
  return schema;
}
