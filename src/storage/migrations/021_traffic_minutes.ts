import type { Kysely } from 'kysely';
import type { MigrationFactory } from './types.js';

/**
 * Each instance's traffic counters' growth per minute (domain/traffic-history/), for the console's
 * charts of the last hour; summed over instances when read, pruned past two hours.
 */
export const trafficMinutes: MigrationFactory = () => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('traffic_minutes')
      .addColumn('minute', 'bigint', (c) => c.notNull())
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('series', 'text', (c) => c.notNull())
      .addColumn('value', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('traffic_minutes_pk', ['minute', 'instance_id', 'series'])
      .execute();
  },
});
