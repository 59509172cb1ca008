import type { Store } from '../types.js';

/**
 * A text that changes whenever a row of the table is inserted or deleted (not when one is
 * updated): ids grow, so a new row raises the largest and a deleted one lowers the count. One
 * statement, compiled once; for caches that reload a table only when it changed.
 */
export function insertionsVersion(store: Store, table: 'reserved_addrs' | 'reserved_domains'): () => Promise<string> {
  const statement = store.prepare(store.db.selectFrom(table).select((eb) => [eb.fn.countAll<number | string>().as('count'), eb.fn.max('id').as('last')]));
  return async () => {
    const row = await statement.first({});
    return `${Number(row?.count ?? 0)}:${row?.last ?? ''}`;
  };
}
