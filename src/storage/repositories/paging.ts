import type { SelectQueryBuilder } from 'kysely';
import type { Page, PageOf } from '../../domain/paging.js';
import { param, type PreparedQuery, type Values } from '../prepared.js';
import type { Store } from '../types.js';

/**
 * Keyset paging, newest first, for every list of the API: `<scope> [AND id < :before]
 * ORDER BY id DESC LIMIT :limit`, asking one row more than the page to learn whether another
 * follows. The cost of a page does not depend on how deep it is; ids are KSUIDs (`C`
 * collation on PostgreSQL), so id order is creation order.
 *
 * `scoped` builds the select of one list (its table, columns and scope, e.g. `account_id =
 * param('account')`); both statements are compiled once, in the repository's constructor.
 */
export class KeysetPages<Row> {
  private readonly first: PreparedQuery<Row>;
  private readonly next: PreparedQuery<Row>;

  // The table is the caller's: any select whose table has an `id` column.
  constructor(store: Store, scoped: () => SelectQueryBuilder<any, any, Row>) {
    this.first = store.prepare(scoped().orderBy('id', 'desc').limit(param<number>('limit')));
    this.next = store.prepare(scoped().where('id', '<', param('before')).orderBy('id', 'desc').limit(param<number>('limit')));
  }

  /** One page: `values` fill the scope's parameters, `toItem` maps a row. */
  async fetch<Item>(values: Values, page: Page, toItem: (row: Row) => Item): Promise<PageOf<Item>> {
    const limit = page.limit + 1;
    const rows =
      page.beforeId === undefined
        ? await this.first.all({ ...values, limit })
        : await this.next.all({ ...values, before: page.beforeId, limit });
    return { items: rows.slice(0, page.limit).map(toItem), hasMore: rows.length > page.limit };
  }
}
