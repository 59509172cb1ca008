import type { Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/**
 * ACME (CERTIFICATES.md §1): the account per directory, a row per name (its certificate, its key
 * sealed, when to order next, and which instance orders it now), and the pending challenges, so
 * whichever instance the CA reaches can answer. Times are Unix milliseconds.
 */
export const acme: MigrationFactory = () => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('acme_accounts')
      .addColumn('directory_url', 'text', (c) => c.primaryKey())
      .addColumn('key_sealed', 'text', (c) => c.notNull())
      .addColumn('account_url', 'text')
      .execute();
    await db.schema
      .createTable('acme_certificates')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('cert_pem', 'text')
      .addColumn('key_sealed', 'text')
      .addColumn('not_after', 'bigint')
      .addColumn('order_at', 'bigint', (c) => c.notNull())
      .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'text')
      .addColumn('order_owner', 'text')
      .addColumn('order_until', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .createTable('acme_challenges')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('key_authorization', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
  },
});
