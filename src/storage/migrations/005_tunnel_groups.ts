import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/**
 * Tunnel group backends, and the backend module of a TLS edge in the edge's row (like its traffic
 * policy module). The foreign key keeps an edge from naming a group that is gone: deleting a
 * group that an edge uses is refused (answered 409), on both dialects.
 */
export const tunnelGroups: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    const id = idType(dialect);
    await db.schema
      .createTable('tunnel_group_backends')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo(''))
      /** JSON object of 1-10 labels, keys sorted. */
      .addColumn('labels', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tunnel_group_backends_account_id').on('tunnel_group_backends').columns(['account_id', 'id']).execute();

    // Both null, or both set: 0/1 and the group's id.
    await db.schema.alterTable('tls_edges').addColumn('backend_enabled', 'integer').execute();
    await db.schema
      .alterTable('tls_edges')
      .addColumn('backend_id', id, (c) => c.references('tunnel_group_backends.id'))
      .execute();
    await db.schema.createIndex('tls_edges_backend_id').on('tls_edges').columns(['backend_id']).execute();
  },
});
