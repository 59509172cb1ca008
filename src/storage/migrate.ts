import { Migrator, sql, type MigrationResultSet } from 'kysely';
import type { Store } from './db.js';
import { allMigrations } from './migrations/index.js';

/**
 * Brings the schema up to date. Safe when several instances start at once: on PostgreSQL the
 * migrator holds an advisory lock, and SQLite allows one writer at a time.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  if (store.dialect === 'postgres' && store.schema) await createSchema(store, store.schema);
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => allMigrations(store.dialect) },
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) throw result.error;
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
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
