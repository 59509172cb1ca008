import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/**
 * Reserved domains and addresses (CERTIFICATES.md §0). A name or port is reserved once across
 * all accounts (unique indexes); wildcard overlaps between accounts are checked by the service.
 */
export const reservedNames: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    const id = idType(dialect);
    await db.schema
      .createTable('reserved_domains')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      /** Lower-case, `*.` for a wildcard. */
      .addColumn('domain', 'text', (c) => c.notNull().unique())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo(''))
      /** JSON {authority, private_key_type, set_at}, or null without a certificate management policy. */
      .addColumn('certificate_policy', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('reserved_domains_account_id').on('reserved_domains').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('reserved_addrs')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      /** A port of EDGE_TCP_PORTS; the host is EDGE_PUBLIC_HOST, whatever it is now. */
      .addColumn('port', 'integer', (c) => c.notNull().unique())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('reserved_addrs_account_id').on('reserved_addrs').columns(['account_id', 'id']).execute();
  },
});
