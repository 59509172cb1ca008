import type { Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/** The TLS edge's tls_termination module (HTTP-POLICY.md §5), in the edge's row like its other modules. */
export const tlsTermination: MigrationFactory = () => ({
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('tls_edges').addColumn('termination_enabled', 'integer').execute();
    await db.schema.alterTable('tls_edges').addColumn('termination_at', 'text').execute();
    await db.schema.alterTable('tls_edges').addColumn('termination_min_version', 'text').execute();
  },
});
