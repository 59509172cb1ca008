import type { Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/**
 * Several instances (CLUSTER.md §1): the cluster CA, one row whose key is sealed with
 * CLUSTER_SECRET (the primary key makes a concurrent second insert a no-op), and the address
 * each instance listens on for the others.
 */
export const cluster: MigrationFactory = () => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('cluster_ca')
      /** Always 1: there is one cluster CA. */
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('cert_pem', 'text', (c) => c.notNull())
      /** The PEM key, AES-256-GCM under CLUSTER_SECRET (domain/sealing.ts). */
      .addColumn('sealed_key', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    /** CLUSTER_ADDR, null without one. */
    await db.schema.alterTable('instances').addColumn('cluster_addr', 'text').execute();
  },
});
