import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/** TLS edges; the traffic policy module lives in the edge's row so replacing it is one UPDATE. */
export const tlsEdges: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    const id = idType(dialect);
    await db.schema
      .createTable('tls_edges')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('hostports', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('policy_enabled', 'integer')
      .addColumn('policy_value', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tls_edges_account_id').on('tls_edges').columns(['account_id', 'id']).execute();
  },
});
