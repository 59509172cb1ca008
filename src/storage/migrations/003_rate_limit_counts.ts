import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/** Per-account request counts per second, shared by every instance on one PostgreSQL database. */
export const rateLimitCounts: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('rate_limit_counts')
      .addColumn('account_id', idType(dialect), (c) => c.notNull())
      .addColumn('second', 'bigint', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('rate_limit_counts_pk', ['account_id', 'second'])
      .execute();
  },
});
