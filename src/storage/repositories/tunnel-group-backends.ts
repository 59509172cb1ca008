import type {
  LabeledTunnel,
  TunnelGroupBackend,
  TunnelGroupBackendChanges,
  TunnelGroupBackendDeletion,
  TunnelGroupBackendRepository,
} from '../../domain/tunnel-group-backends/types.js';
import type { Page, PageOf } from '../../domain/paging.js';
import { isForeignKeyViolation } from '../errors.js';
import { param } from '../prepared.js';
import type { TunnelGroupBackendsTable } from '../schema.js';
import type { Store } from '../types.js';
import { KeysetPages } from './paging.js';
import { parseLabels } from './labels.js';

const COLUMNS = ['id', 'description', 'metadata', 'labels', 'created_at'] as const;

type Row = Pick<TunnelGroupBackendsTable, (typeof COLUMNS)[number]>;

/**
 * Tunnel group backends (migration 005), in the style of accounts.ts. A group that an edge's
 * backend module names is not deleted: the DELETE's own condition says so, and the foreign key
 * of tls_edges.backend_id covers a module written at the same moment.
 */
export class SqlTunnelGroupBackendRepository implements TunnelGroupBackendRepository {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    const scoped = () => db.selectFrom('tunnel_group_backends').select(COLUMNS).where('account_id', '=', param('account'));
    this.statements = {
      insert: store.prepare(
        db.insertInto('tunnel_group_backends').values({
          id: param('id'),
          account_id: param('account'),
          description: param('description'),
          metadata: param('metadata'),
          labels: param('labels'),
          created_at: param('createdAt'),
        }),
      ),
      get: store.prepare(scoped().where('id', '=', param('id'))),
      list: new KeysetPages(store, scoped),
      // NULL keeps a column: one statement for every PATCH.
      update: store.prepare(
        db
          .updateTable('tunnel_group_backends')
          .set((eb) => ({
            description: eb.fn.coalesce(eb.val(param<string | null>('description')), eb.ref('description')),
            metadata: eb.fn.coalesce(eb.val(param<string | null>('metadata')), eb.ref('metadata')),
            labels: eb.fn.coalesce(eb.val(param<string | null>('labels')), eb.ref('labels')),
          }))
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .returning(COLUMNS),
      ),
      delete: store.prepare(
        db
          .deleteFrom('tunnel_group_backends')
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .where((eb) => eb.not(eb.exists(eb.selectFrom('tls_edges').select('tls_edges.id').where('tls_edges.backend_id', '=', param('id'))))),
      ),
      // The edges are the group's account's own: a group is never named across accounts.
      usedBy: store.prepare(db.selectFrom('tls_edges').select('id').where('backend_id', '=', param('id')).orderBy('id').limit(100)),
      selectors: store.prepare(db.selectFrom('tunnel_group_backends').select(['id', 'labels']).where('account_id', '=', param('account')).orderBy('id')),
      labeledTunnels: store.prepare(
        db
          .selectFrom('tunnels')
          .select(['id', 'labels'])
          .where('account_id', '=', param('account'))
          .where('labels', 'is not', null)
          .orderBy('id'),
      ),
    };
  }

  async insert(group: TunnelGroupBackend): Promise<void> {
    await this.statements.insert.run({
      id: group.id,
      account: group.accountId,
      description: group.description,
      metadata: group.metadata,
      labels: JSON.stringify(group.labels),
      createdAt: group.createdAt,
    });
  }

  async get(accountId: string, id: string): Promise<TunnelGroupBackend | undefined> {
    const row = await this.statements.get.first({ account: accountId, id });
    return row && toGroup(row, accountId);
  }

  async listPage(accountId: string, page: Page): Promise<PageOf<TunnelGroupBackend>> {
    return this.statements.list.fetch({ account: accountId }, page, (row) => toGroup(row, accountId));
  }

  async update(accountId: string, id: string, changes: TunnelGroupBackendChanges): Promise<TunnelGroupBackend | undefined> {
    const { description, metadata, labels } = changes;
    if (description === undefined && metadata === undefined && labels === undefined) return this.get(accountId, id);
    const row = await this.statements.update.first({
      account: accountId,
      id,
      description: description ?? null,
      metadata: metadata ?? null,
      labels: labels === undefined ? null : JSON.stringify(labels),
    });
    return row && toGroup(row, accountId);
  }

  async delete(accountId: string, id: string): Promise<TunnelGroupBackendDeletion> {
    try {
      if ((await this.statements.delete.run({ account: accountId, id })) > 0) return { outcome: 'deleted' };
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
    }
    if (!(await this.get(accountId, id))) return { outcome: 'absent' };
    const edges = await this.statements.usedBy.all({ id });
    // Unused and yet not deleted: the last edge let go of it in between; try once more.
    if (edges.length === 0) return (await this.statements.delete.run({ account: accountId, id })) > 0 ? { outcome: 'deleted' } : { outcome: 'absent' };
    return { outcome: 'in-use', edgeIds: edges.map((edge) => edge.id) };
  }

  async selectors(accountId: string): Promise<LabeledTunnel[]> {
    const rows = await this.statements.selectors.all({ account: accountId });
    return rows.map((row) => ({ id: row.id, labels: parseLabels(row.labels) }));
  }

  async labeledTunnels(accountId: string): Promise<LabeledTunnel[]> {
    const rows = await this.statements.labeledTunnels.all({ account: accountId });
    return rows.map((row) => ({ id: row.id, labels: parseLabels(row.labels!) }));
  }
}

function toGroup(row: Row, accountId: string): TunnelGroupBackend {
  return {
    id: row.id,
    accountId,
    description: row.description,
    metadata: row.metadata,
    labels: parseLabels(row.labels),
    createdAt: row.created_at,
  };
}
