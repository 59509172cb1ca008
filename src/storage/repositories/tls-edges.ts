import type { Selectable } from 'kysely';
import type { Page, PageOf } from '../../domain/paging.js';
import type { TlsEdge, TlsEdgeChanges, TlsEdgeRepository, TrafficPolicyModule } from '../../domain/edges/types.js';
import type { Store } from '../db.js';
import type { TlsEdgesTable } from '../schema.js';

const COLUMNS = ['id', 'account_id', 'description', 'metadata', 'hostports', 'policy_enabled', 'policy_value', 'created_at'] as const;
type Row = Pick<Selectable<TlsEdgesTable>, (typeof COLUMNS)[number]>;
type Writable = Partial<Pick<TlsEdgesTable, 'description' | 'metadata' | 'hostports' | 'policy_enabled' | 'policy_value'>>;

export class SqlTlsEdgeRepository implements TlsEdgeRepository {
  constructor(private readonly store: Store) {}

  async insert(edge: TlsEdge): Promise<void> {
    await this.store.db
      .insertInto('tls_edges')
      .values({
        id: edge.id,
        account_id: edge.accountId,
        description: edge.description,
        metadata: edge.metadata,
        hostports: JSON.stringify(edge.hostports),
        ...moduleColumns(edge.trafficPolicy),
        created_at: edge.createdAt,
      })
      .execute();
    await this.store.durable();
  }

  async get(accountId: string, id: string): Promise<TlsEdge | undefined> {
    const row = await this.store.db
      .selectFrom('tls_edges')
      .select(COLUMNS)
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row && toEdge(row);
  }

  async listPage(accountId: string, page: Page): Promise<PageOf<TlsEdge>> {
    let query = this.store.db.selectFrom('tls_edges').select(COLUMNS).where('account_id', '=', accountId);
    if (page.beforeId !== undefined) query = query.where('id', '<', page.beforeId);
    const rows = await query.orderBy('id', 'desc').limit(page.limit + 1).execute();
    return { items: rows.slice(0, page.limit).map(toEdge), hasMore: rows.length > page.limit };
  }

  async update(accountId: string, id: string, changes: TlsEdgeChanges): Promise<TlsEdge | undefined> {
    const set: Writable = {};
    if (changes.description !== undefined) set.description = changes.description;
    if (changes.metadata !== undefined) set.metadata = changes.metadata;
    if (changes.hostports !== undefined) set.hostports = JSON.stringify(changes.hostports);
    if (changes.trafficPolicy !== undefined) Object.assign(set, moduleColumns(changes.trafficPolicy));
    return this.write(accountId, id, set);
  }

  async setTrafficPolicy(accountId: string, id: string, module: TrafficPolicyModule | null): Promise<boolean> {
    return (await this.write(accountId, id, moduleColumns(module))) !== undefined;
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.store.db
      .deleteFrom('tls_edges')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    const deleted = result.numDeletedRows > 0n;
    if (deleted) await this.store.durable();
    return deleted;
  }

  /** One UPDATE … RETURNING: concurrent writers never interleave inside a row. */
  private async write(accountId: string, id: string, set: Writable): Promise<TlsEdge | undefined> {
    if (Object.keys(set).length === 0) return this.get(accountId, id);
    const row = await this.store.db
      .updateTable('tls_edges')
      .set(set)
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (row) await this.store.durable();
    return row && toEdge(row);
  }
}

function moduleColumns(module: TrafficPolicyModule | null): Pick<TlsEdgesTable, 'policy_enabled' | 'policy_value'> {
  return module ? { policy_enabled: module.enabled ? 1 : 0, policy_value: module.value } : { policy_enabled: null, policy_value: null };
}

function toEdge(row: Row): TlsEdge {
  return {
    id: row.id,
    accountId: row.account_id,
    description: row.description,
    metadata: row.metadata,
    hostports: JSON.parse(row.hostports) as string[],
    trafficPolicy: row.policy_value === null ? null : { enabled: Number(row.policy_enabled) === 1, value: row.policy_value },
    createdAt: row.created_at,
  };
}
