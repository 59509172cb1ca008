import type { BackendMissing, BackendModule, TlsEdge, TlsEdgeChanges, TlsEdgeRepository, TlsTerminationModule, TrafficPolicyModule } from '../../domain/edges/types.js';
import type { Page, PageOf } from '../../domain/paging.js';
import { isForeignKeyViolation } from '../errors.js';
import { param } from '../prepared.js';
import type { TlsEdgesTable } from '../schema.js';
import type { Store } from '../types.js';
import { KeysetPages } from './paging.js';

const COLUMNS = [
  'id',
  'description',
  'metadata',
  'hostports',
  'policy_enabled',
  'policy_value',
  'backend_enabled',
  'backend_id',
  'termination_enabled',
  'termination_at',
  'termination_min_version',
  'created_at',
] as const;

type Row = Pick<TlsEdgesTable, (typeof COLUMNS)[number]>;

/**
 * Every statement is compiled once (Store.prepare); both modules live in the edge's row. A
 * backend naming a group deleted meanwhile is refused by the foreign key: answered BackendMissing.
 */
export class SqlTlsEdgeRepository implements TlsEdgeRepository {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    const scoped = () => db.selectFrom('tls_edges').select(COLUMNS).where('account_id', '=', param('account'));
    this.statements = {
      insert: store.prepare(
        db.insertInto('tls_edges').values({
          id: param('id'),
          account_id: param('account'),
          description: param('description'),
          metadata: param('metadata'),
          hostports: param('hostports'),
          policy_enabled: param<number | null>('enabled'),
          policy_value: param<string | null>('value'),
          backend_enabled: param<number | null>('backendEnabled'),
          backend_id: param<string | null>('backendId'),
          termination_enabled: param<number | null>('terminationEnabled'),
          termination_at: param<string | null>('terminationAt'),
          termination_min_version: param<string | null>('terminationMinVersion'),
          created_at: param('createdAt'),
        }),
      ),
      get: store.prepare(scoped().where('id', '=', param('id'))),
      list: new KeysetPages(store, scoped),
      // NULL keeps a column: one statement for every PATCH (the module's two columns are given
      // together or not at all).
      update: store.prepare(
        db
          .updateTable('tls_edges')
          .set((eb) => ({
            description: eb.fn.coalesce(eb.val(param<string | null>('description')), eb.ref('description')),
            metadata: eb.fn.coalesce(eb.val(param<string | null>('metadata')), eb.ref('metadata')),
            hostports: eb.fn.coalesce(eb.val(param<string | null>('hostports')), eb.ref('hostports')),
            policy_enabled: eb.fn.coalesce(eb.val(param<number | null>('enabled')), eb.ref('policy_enabled')),
            policy_value: eb.fn.coalesce(eb.val(param<string | null>('value')), eb.ref('policy_value')),
            backend_enabled: eb.fn.coalesce(eb.val(param<number | null>('backendEnabled')), eb.ref('backend_enabled')),
            backend_id: eb.fn.coalesce(eb.val(param<string | null>('backendId')), eb.ref('backend_id')),
            // the module's three columns are replaced together: a module without min_version sends ''
            termination_enabled: eb.fn.coalesce(eb.val(param<number | null>('terminationEnabled')), eb.ref('termination_enabled')),
            termination_min_version: eb.fn.coalesce(eb.val(param<string | null>('terminationMinVersion')), eb.ref('termination_min_version')),
            termination_at: eb.fn.coalesce(eb.val(param<string | null>('terminationAt')), eb.ref('termination_at')),
          }))
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .returning(COLUMNS),
      ),
      setModule: store.prepare(
        db
          .updateTable('tls_edges')
          .set({ policy_enabled: param<number | null>('enabled'), policy_value: param<string | null>('value') })
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account')),
      ),
      setBackend: store.prepare(
        db
          .updateTable('tls_edges')
          .set({ backend_enabled: param<number | null>('backendEnabled'), backend_id: param<string | null>('backendId') })
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account')),
      ),
      setTermination: store.prepare(
        db
          .updateTable('tls_edges')
          .set({
            termination_enabled: param<number | null>('terminationEnabled'),
            termination_at: param<string | null>('terminationAt'),
            termination_min_version: param<string | null>('terminationMinVersion'),
          })
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account')),
      ),
      delete: store.prepare(db.deleteFrom('tls_edges').where('id', '=', param('id')).where('account_id', '=', param('account'))),
    };
  }

  async insert(edge: TlsEdge): Promise<'inserted' | BackendMissing> {
    const run = this.statements.insert.run({
      id: edge.id,
      account: edge.accountId,
      description: edge.description,
      metadata: edge.metadata,
      hostports: JSON.stringify(edge.hostports),
      ...moduleValues(edge.trafficPolicy),
      ...backendValues(edge.backend),
      ...terminationValues(edge.tlsTermination),
      createdAt: edge.createdAt,
    });
    return (await backendMissingOr(run)) === 'backend-missing' ? 'backend-missing' : 'inserted';
  }

  async get(accountId: string, id: string): Promise<TlsEdge | undefined> {
    const row = await this.statements.get.first({ account: accountId, id });
    return row && toEdge(row, accountId);
  }

  async listPage(accountId: string, page: Page): Promise<PageOf<TlsEdge>> {
    return this.statements.list.fetch({ account: accountId }, page, (row) => toEdge(row, accountId));
  }

  async update(accountId: string, id: string, changes: TlsEdgeChanges): Promise<TlsEdge | undefined | BackendMissing> {
    const { description, metadata, hostports, trafficPolicy, backend, tlsTermination } = changes;
    if (Object.values(changes).every((change) => change === undefined)) {
      return this.get(accountId, id);
    }
    const row = await backendMissingOr(this.statements.update.first({
      account: accountId,
      id,
      description: description ?? null,
      metadata: metadata ?? null,
      hostports: hostports === undefined ? null : JSON.stringify(hostports),
      ...moduleValues(trafficPolicy ?? null),
      ...backendValues(backend ?? null),
      ...terminationValues(tlsTermination ?? null),
    }));
    if (row === 'backend-missing') return row;
    return row && toEdge(row, accountId);
  }

  async setTrafficPolicy(accountId: string, id: string, module: TrafficPolicyModule | null): Promise<boolean> {
    return (await this.statements.setModule.run({ account: accountId, id, ...moduleValues(module) })) > 0;
  }

  async setBackend(accountId: string, id: string, module: BackendModule | null): Promise<boolean | BackendMissing> {
    const changed = await backendMissingOr(this.statements.setBackend.run({ account: accountId, id, ...backendValues(module) }));
    return changed === 'backend-missing' ? changed : changed > 0;
  }

  async setTlsTermination(accountId: string, id: string, module: TlsTerminationModule | null): Promise<boolean> {
    return (await this.statements.setTermination.run({ account: accountId, id, ...terminationValues(module) })) > 0;
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.statements.delete.run({ account: accountId, id })) > 0;
  }
}

function moduleValues(module: TrafficPolicyModule | null): { enabled: number | null; value: string | null } {
  return module ? { enabled: module.enabled ? 1 : 0, value: module.value } : { enabled: null, value: null };
}

function backendValues(module: BackendModule | null): { backendEnabled: number | null; backendId: string | null } {
  return module ? { backendEnabled: module.enabled ? 1 : 0, backendId: module.backendId } : { backendEnabled: null, backendId: null };
}

/** '' stands for "no min_version" in a module that is there, so that a PATCH's NULL can mean "keep". */
function terminationValues(module: TlsTerminationModule | null) {
  return {
    terminationEnabled: module ? (module.enabled ? 1 : 0) : null,
    terminationAt: module?.terminateAt ?? null,
    terminationMinVersion: module ? (module.minVersion ?? '') : null,
  };
}

/** The module from its two columns (also the edge routes' reader's). */
export function trafficPolicyOfRow(row: Pick<TlsEdgesTable, 'policy_enabled' | 'policy_value'>): TrafficPolicyModule | null {
  return row.policy_value === null ? null : { enabled: Number(row.policy_enabled) === 1, value: row.policy_value };
}

/** The module from its three columns (also the edge routes' reader's). */
export function terminationOfRow(row: Pick<TlsEdgesTable, 'termination_enabled' | 'termination_at' | 'termination_min_version'>): TlsTerminationModule | null {
  if (row.termination_at === null) return null;
  return {
    enabled: Number(row.termination_enabled) === 1,
    terminateAt: row.termination_at === 'edge' ? 'edge' : 'upstream',
    minVersion: (row.termination_min_version || null) as TlsTerminationModule['minVersion'],
  };
}

async function backendMissingOr<T>(write: Promise<T>): Promise<T | BackendMissing> {
  try {
    return await write;
  } catch (error) {
    if (isForeignKeyViolation(error)) return 'backend-missing';
    throw error;
  }
}

function toEdge(row: Row, accountId: string): TlsEdge {
  return {
    id: row.id,
    accountId,
    description: row.description,
    metadata: row.metadata,
    hostports: JSON.parse(row.hostports) as string[],
    backend: row.backend_id === null ? null : { enabled: Number(row.backend_enabled) === 1, backendId: row.backend_id },
    trafficPolicy: trafficPolicyOfRow(row),
    tlsTermination: terminationOfRow(row),
    createdAt: row.created_at,
  };
}
