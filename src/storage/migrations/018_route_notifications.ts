import { sql, type Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/**
 * Several instances (CLUSTER.md §2): a bind or unbind anywhere wakes the other instances'
 * routing caches at once. PostgreSQL only (SQLite is one instance): a change to `tunnels` or
 * `endpoints` sends NOTIFY `burrow_routes` with the schema it was made in, so the instances of
 * one schema ignore those of another sharing the database. Per statement: one notification per
 * write, however many rows; PostgreSQL folds equal ones of a transaction into one.
 */
export const routeNotifications: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    if (dialect !== 'postgres') return;
    await sql`create or replace function burrow_routes_changed() returns trigger language plpgsql as $$
      begin
        perform pg_notify('burrow_routes', current_schema());
        return null;
      end $$`.execute(db);
    for (const table of ['tunnels', 'endpoints']) {
      await sql`create trigger ${sql.raw(`${table}_routes_changed`)} after insert or update or delete on ${sql.table(table)}
        for each statement execute function burrow_routes_changed()`.execute(db);
    }
  },
});
