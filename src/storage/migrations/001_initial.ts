import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/** Accounts, principals (users and bots), API keys, tunnel credentials, and the bootstrap marker. */
export const initial: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    const id = idType(dialect);
    await db.schema
      .createTable('accounts')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('revoked_at', 'text')
      .execute();

    await db.schema
      .createTable('principals')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('revoked_at', 'text')
      .execute();
    await db.schema.createIndex('principals_account_id').on('principals').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('api_keys')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      .addColumn('owner_id', id, (c) => c.notNull().references('principals.id'))
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('secret_hash', 'text', (c) => c.notNull())
      .addColumn('display_prefix', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('revoked_at', 'text')
      .execute();
    await db.schema.createIndex('api_keys_account_id').on('api_keys').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('credentials')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      .addColumn('owner_id', id, (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('acl', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('token_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Keyset pagination walks this index: WHERE account_id = ? AND id < ? ORDER BY id DESC.
    await db.schema.createIndex('credentials_account_id').on('credentials').columns(['account_id', 'id']).execute();

    // One row at most: whoever inserts it first on an empty database performs the bootstrap.
    await db.schema
      .createTable('bootstrap')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
  },
});
