import type { Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/**
 * An endpoint's policy version (CLUSTER.md §2): one more at each policy patch, so that other
 * instances' routing caches see every patch, two of them in one millisecond included (the row's
 * `updated_at`, its version before, is written to the millisecond).
 */
export const endpointPolicyVersion: MigrationFactory = () => ({
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('endpoints').addColumn('policy_version', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  },
});
