import { sql, type Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/**
 * Several instances (CLUSTER.md §3): a command queued for a session, or a credential deleted or
 * changed (or an account revoked) through one instance, wakes the instance holding the session at
 * once rather than at its next poll. PostgreSQL only (SQLite is one instance). As migration 018:
 * per statement, the schema as payload. `burrow_session_commands` on a queued command;
 * `burrow_credentials` on a credential deleted or updated, or an account updated.
 */
export const sessionNotifications: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    if (dialect !== 'postgres') return;
    const notifiers = [
      { fn: 'burrow_session_commands_queued', channel: 'burrow_session_commands', triggers: [{ table: 'session_commands', on: 'insert' }] },
      {
        fn: 'burrow_credentials_changed',
        channel: 'burrow_credentials',
        triggers: [
          { table: 'credentials', on: 'update or delete' },
          { table: 'accounts', on: 'update or delete' },
        ],
      },
    ];
    for (const { fn, channel, triggers } of notifiers) {
      await sql`create or replace function ${sql.raw(fn)}() returns trigger language plpgsql as $$
        begin
          perform pg_notify(${sql.raw(`'${channel}'`)}, current_schema());
          return null;
        end $$`.execute(db);
      for (const { table, on } of triggers) {
        await sql`create trigger ${sql.raw(`${table}_${fn.replace(/^burrow_/, '')}`)} after ${sql.raw(on)} on ${sql.table(table)}
          for each statement execute function ${sql.raw(fn)}()`.execute(db);
      }
    }
  },
});
