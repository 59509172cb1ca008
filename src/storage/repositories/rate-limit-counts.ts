import type { SharedCounts } from '../../domain/rate-limit.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';

/**
 * The rate limiter's shared counts: one row per account and second, summed by every instance.
 * `sync` writes and reads lists of any length, so its SQL is built when it runs.
 */
export class SqlRateLimitCounts implements SharedCounts {
  private readonly statements;

  constructor(private readonly store: Store) {
    this.statements = {
      prune: store.prepare(store.db.deleteFrom('rate_limit_counts').where('second', '<', param<number>('before'))),
    };
  }

  async sync(increments: Map<string, Map<number, number>>, accounts: string[], sinceSecond: number) {
    const rows: { account_id: string; second: number; count: number }[] = [];
    for (const [account_id, buckets] of increments) for (const [second, count] of buckets) rows.push({ account_id, second, count });
    if (rows.length > 0) {
      // A fixed row order gives concurrent instances the same lock order: no deadlocks.
      rows.sort((a, b) => (a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1 : a.second - b.second));
      await this.store.db
        .insertInto('rate_limit_counts')
        .values(rows)
        .onConflict((conflict) =>
          conflict.columns(['account_id', 'second']).doUpdateSet((eb) => ({ count: eb('rate_limit_counts.count', '+', eb.ref('excluded.count')) })),
        )
        .execute();
    }
    const totals = new Map<string, Map<number, number>>();
    if (accounts.length === 0) return totals;
    const found = await this.store.db
      .selectFrom('rate_limit_counts')
      .select(['account_id', 'second', 'count'])
      .where('account_id', 'in', accounts)
      .where('second', '>=', sinceSecond)
      .execute();
    for (const row of found) {
      let buckets = totals.get(row.account_id);
      if (!buckets) totals.set(row.account_id, (buckets = new Map()));
      buckets.set(Number(row.second), Number(row.count));
    }
    return totals;
  }

  async prune(beforeSecond: number): Promise<void> {
    await this.statements.prune.run({ before: beforeSecond });
  }
}
