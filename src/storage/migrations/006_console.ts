import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/**
 * The /api_keys resource's metadata (CONSOLE.md §2), and console sign-in sessions. A session
 * row holds only the SHA-256 of its cookie value; it names the API key it was made with, so
 * revoking the key ends it (the lookup joins the key). Traffic inspection (CONSOLE.md §2): each
 * account's capture settings, and the requests captured per endpoint (the last INSPECTION_KEEP).
 */
export const consoleSessions: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    const id = idType(dialect);
    await db.schema.alterTable('api_keys').addColumn('metadata', 'text', (c) => c.notNull().defaultTo('')).execute();
    // Non-admins list only their own keys: WHERE account_id = ? AND owner_id = ? AND id < ?.
    await db.schema.createIndex('api_keys_owner_id').on('api_keys').columns(['account_id', 'owner_id', 'id']).execute();

    await db.schema
      .createTable('console_sessions')
      .addColumn('id_hash', 'text', (c) => c.primaryKey())
      .addColumn('api_key_id', id, (c) => c.notNull().references('api_keys.id'))
      .addColumn('csrf_token', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      /** Unix milliseconds of the last request: idle expiry. */
      .addColumn('last_used_ms', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('console_sessions_last_used').on('console_sessions').columns(['last_used_ms']).execute();

    await db.schema
      .createTable('traffic_inspection_settings')
      .addColumn('account_id', id, (c) => c.primaryKey().references('accounts.id'))
      .addColumn('capture', 'text', (c) => c.notNull())
      .addColumn('body_limit_bytes', 'integer', (c) => c.notNull())
      .addColumn('redact_secrets', 'integer', (c) => c.notNull())
      .execute();

    // No foreign key to endpoints: an endpoint's row goes when its agent does, its traffic stays.
    await db.schema
      .createTable('inspected_requests')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull())
      .addColumn('endpoint_id', id, (c) => c.notNull())
      /** JSON: the whole captured exchange (heads, bodies as base64, actions), as the API shows it. */
      .addColumn('exchange', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Pages newest first per endpoint, and the trim to the last INSPECTION_KEEP.
    await db.schema.createIndex('inspected_requests_endpoint').on('inspected_requests').columns(['account_id', 'endpoint_id', 'id']).execute();
  },
});
