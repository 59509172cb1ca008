import type { Page, PageOf } from '../../domain/paging.js';
import type { ReservedAddr, ReservedAddrChanges, ReservedAddrRepository } from '../../domain/reservations/types.js';
import { param } from '../prepared.js';
import type { ReservedAddrsTable } from '../schema.js';
import type { Store } from '../types.js';
import { insertionsVersion } from './insertions-version.js';
import { KeysetPages } from './paging.js';

const COLUMNS = ['id', 'account_id', 'port', 'region', 'description', 'metadata', 'created_at'] as const;

type Row = Pick<ReservedAddrsTable, (typeof COLUMNS)[number]>;

/** Reserved addresses (migration 010), in the style of accounts.ts; the port lists are built per call. */
export class SqlReservedAddrRepository implements ReservedAddrRepository {
  private readonly statements;
  private readonly insertions;

  constructor(private readonly store: Store) {
    const db = store.db;
    const scoped = () => db.selectFrom('reserved_addrs').select(COLUMNS).where('account_id', '=', param('account'));
    this.insertions = insertionsVersion(store, 'reserved_addrs');
    this.statements = {
      insert: store.prepare(
        db
          .insertInto('reserved_addrs')
          .values({
            id: param('id'),
            account_id: param('account'),
            port: param('port'),
            region: param('region'),
            description: param('description'),
            metadata: param('metadata'),
            created_at: param('createdAt'),
          })
          .onConflict((c) => c.column('port').doNothing()),
      ),
      get: store.prepare(scoped().where('id', '=', param('id'))),
      list: new KeysetPages(store, scoped),
      update: store.prepare(
        db
          .updateTable('reserved_addrs')
          .set((eb) => ({
            description: eb.fn.coalesce(eb.val(param<string | null>('description')), eb.ref('description')),
            metadata: eb.fn.coalesce(eb.val(param<string | null>('metadata')), eb.ref('metadata')),
          }))
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .returning(COLUMNS),
      ),
      delete: store.prepare(db.deleteFrom('reserved_addrs').where('id', '=', param('id')).where('account_id', '=', param('account'))),
      reserved: store.prepare(db.selectFrom('reserved_addrs').select('port')),
      // claims of TCP ports are keyed `tcp:<port>` (binds.ts claimKey)
      bound: store.prepare(db.selectFrom('tunnel_claims').select('key').where('key', 'like', 'tcp:%')),
    };
  }

  async insert(reserved: ReservedAddr): Promise<boolean> {
    const inserted = await this.statements.insert.run({
      id: reserved.id,
      account: reserved.accountId,
      port: reserved.port,
      region: reserved.region,
      description: reserved.description,
      metadata: reserved.metadata,
      createdAt: reserved.createdAt,
    });
    return inserted > 0;
  }

  async get(accountId: string, id: string): Promise<ReservedAddr | undefined> {
    const row = await this.statements.get.first({ account: accountId, id });
    return row && toReservedAddr(row);
  }

  listPage(accountId: string, page: Page): Promise<PageOf<ReservedAddr>> {
    return this.statements.list.fetch({ account: accountId }, page, toReservedAddr);
  }

  async update(accountId: string, id: string, changes: ReservedAddrChanges): Promise<ReservedAddr | undefined> {
    const row = await this.statements.update.first({ account: accountId, id, description: changes.description ?? null, metadata: changes.metadata ?? null });
    return row && toReservedAddr(row);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.statements.delete.run({ account: accountId, id })) > 0;
  }

  async unavailablePorts(): Promise<ReadonlySet<number>> {
    const taken = await this.reservedPorts();
    const claims = await this.statements.bound.all({});
    return new Set([...taken, ...claims.map((claim) => Number(claim.key.slice(4)))]);
  }

  async reservedPorts(): Promise<ReadonlySet<number>> {
    return new Set((await this.statements.reserved.all({})).map((row) => Number(row.port)));
  }

  async owners(ports: readonly number[]): Promise<ReadonlyMap<number, string>> {
    const owners = new Map<number, string>();
    for (let i = 0; i < ports.length; i += 500) {
      const rows = await this.store.db.selectFrom('reserved_addrs').select(['port', 'account_id']).where('port', 'in', ports.slice(i, i + 500)).execute();
      for (const row of rows) owners.set(Number(row.port), row.account_id);
    }
    return owners;
  }

  /** Changes whenever a reservation is made or deleted. */
  version(): Promise<string> {
    return this.insertions();
  }
}

function toReservedAddr(row: Row): ReservedAddr {
  return {
    id: row.id,
    accountId: row.account_id,
    port: Number(row.port),
    region: row.region,
    description: row.description,
    metadata: row.metadata,
    createdAt: row.created_at,
  };
}
