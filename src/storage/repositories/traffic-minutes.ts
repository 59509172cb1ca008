import type { MinuteCount, TrafficHistoryRepository } from '../../domain/traffic-history/types.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';

/**
 * Per-minute traffic counts, one row per minute, instance and series. `add` writes a list of any
 * length (a handful of series), so its SQL is built when it runs.
 */
export class SqlTrafficMinutes implements TrafficHistoryRepository {
  private readonly statements;

  constructor(private readonly store: Store) {
    const db = store.db;
    this.statements = {
      sums: store.prepare(
        db
          .selectFrom('traffic_minutes')
          .select(['minute', 'series', (eb) => eb.fn.sum<number | string>('value').as('value')])
          .where('minute', '>=', param<number>('since'))
          .groupBy(['minute', 'series']),
      ),
      instances: store.prepare(
        db
          .selectFrom('traffic_minutes')
          .select((eb) => eb.fn.count<number | string>('instance_id').distinct().as('count'))
          .where('minute', '>=', param<number>('since')),
      ),
      prune: store.prepare(db.deleteFrom('traffic_minutes').where('minute', '<', param<number>('before'))),
    };
  }

  async add(instanceId: string, counts: readonly MinuteCount[]): Promise<void> {
    if (counts.length === 0) return;
    await this.store.db
      .insertInto('traffic_minutes')
      .values(counts.map((count) => ({ minute: count.minute, instance_id: instanceId, series: count.series, value: count.value })))
      .onConflict((conflict) =>
        conflict.columns(['minute', 'instance_id', 'series']).doUpdateSet((eb) => ({ value: eb('traffic_minutes.value', '+', eb.ref('excluded.value')) })),
      )
      .execute();
  }

  async sums(sinceMinute: number): Promise<MinuteCount[]> {
    const rows = await this.statements.sums.all({ since: sinceMinute });
    return rows.map((row) => ({ minute: Number(row.minute), series: row.series, value: Number(row.value) }));
  }

  async instances(sinceMinute: number): Promise<number> {
    const row = await this.statements.instances.first({ since: sinceMinute });
    return Number(row?.count ?? 0);
  }

  async prune(beforeMinute: number): Promise<void> {
    await this.statements.prune.run({ before: beforeMinute });
  }
}
