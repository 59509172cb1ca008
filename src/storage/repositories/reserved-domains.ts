import type { Page, PageOf } from '../../domain/paging.js';
import type { CertificatePolicy, NameReservation, ReservedDomain, ReservedDomainChanges, ReservedDomainRepository } from '../../domain/reservations/types.js';
import { param } from '../prepared.js';
import type { ReservedDomainsTable } from '../schema.js';
import type { Store } from '../types.js';
import { insertionsVersion } from './insertions-version.js';
import { KeysetPages } from './paging.js';

const COLUMNS = ['id', 'account_id', 'domain', 'region', 'description', 'metadata', 'certificate_policy', 'created_at'] as const;

type Row = Pick<ReservedDomainsTable, (typeof COLUMNS)[number]>;

const IN_CHUNK = 500;

/** Reserved domains (migration 010), in the style of accounts.ts; `matching` varies in arity, so it is built per call. */
export class SqlReservedDomainRepository implements ReservedDomainRepository {
  private readonly statements;
  private readonly insertions;

  constructor(private readonly store: Store) {
    const db = store.db;
    const scoped = () => db.selectFrom('reserved_domains').select(COLUMNS).where('account_id', '=', param('account'));
    this.insertions = insertionsVersion(store, 'reserved_domains');
    this.statements = {
      insert: store.prepare(
        db
          .insertInto('reserved_domains')
          .values({
            id: param('id'),
            account_id: param('account'),
            domain: param('domain'),
            region: param('region'),
            description: param('description'),
            metadata: param('metadata'),
            certificate_policy: param('policy'),
            created_at: param('createdAt'),
          })
          .onConflict((c) => c.column('domain').doNothing()),
      ),
      get: store.prepare(scoped().where('id', '=', param('id'))),
      list: new KeysetPages(store, scoped),
      // NULL keeps a column: one statement for every PATCH. The policy is its own statement:
      // null there means "remove".
      update: store.prepare(
        db
          .updateTable('reserved_domains')
          .set((eb) => ({
            description: eb.fn.coalesce(eb.val(param<string | null>('description')), eb.ref('description')),
            metadata: eb.fn.coalesce(eb.val(param<string | null>('metadata')), eb.ref('metadata')),
          }))
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .returning(COLUMNS),
      ),
      setPolicy: store.prepare(
        db
          .updateTable('reserved_domains')
          .set({ certificate_policy: param<string | null>('policy') })
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .returning(COLUMNS),
      ),
      delete: store.prepare(db.deleteFrom('reserved_domains').where('id', '=', param('id')).where('account_id', '=', param('account'))),
    };
  }

  async insert(reserved: ReservedDomain): Promise<boolean> {
    const inserted = await this.statements.insert.run({
      id: reserved.id,
      account: reserved.accountId,
      domain: reserved.domain,
      region: reserved.region,
      description: reserved.description,
      metadata: reserved.metadata,
      policy: policyText(reserved.certificatePolicy),
      createdAt: reserved.createdAt,
    });
    return inserted > 0;
  }

  async get(accountId: string, id: string): Promise<ReservedDomain | undefined> {
    const row = await this.statements.get.first({ account: accountId, id });
    return row && toReservedDomain(row);
  }

  listPage(accountId: string, page: Page): Promise<PageOf<ReservedDomain>> {
    return this.statements.list.fetch({ account: accountId }, page, toReservedDomain);
  }

  async update(accountId: string, id: string, changes: ReservedDomainChanges): Promise<ReservedDomain | undefined> {
    const texts = changes.description !== undefined || changes.metadata !== undefined;
    if (!texts && changes.certificatePolicy === undefined) return this.get(accountId, id);
    let row: Row | undefined;
    if (texts) {
      row = await this.statements.update.first({ account: accountId, id, description: changes.description ?? null, metadata: changes.metadata ?? null });
      if (!row) return undefined;
    }
    if (changes.certificatePolicy !== undefined) {
      row = await this.statements.setPolicy.first({ account: accountId, id, policy: policyText(changes.certificatePolicy) });
    }
    return row && toReservedDomain(row);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.statements.delete.run({ account: accountId, id })) > 0;
  }

  async matching(domains: readonly string[], under: string | undefined): Promise<NameReservation[]> {
    const found: NameReservation[] = [];
    // in chunks: a data plane asks for every name it serves at once, beyond a statement's parameters
    for (let i = 0; i === 0 || i < domains.length; i += IN_CHUNK) {
      const names = domains.slice(i, i + IN_CHUNK);
      const lookUnder = i === 0 ? under : undefined;
      if (names.length === 0 && lookUnder === undefined) break;
      const rows = await this.store.db
        .selectFrom('reserved_domains')
        .select(['account_id', 'domain'])
        .where((eb) => {
          const conditions = [];
          if (names.length > 0) conditions.push(eb('domain', 'in', names));
          // names are [a-z0-9.*-]: nothing in them is a LIKE wildcard
          if (lookUnder !== undefined) conditions.push(eb('domain', 'like', `%.${lookUnder}`));
          return eb.or(conditions);
        })
        .execute();
      for (const row of rows) found.push({ accountId: row.account_id, domain: row.domain });
    }
    return found;
  }

  /** Changes whenever a reservation is made or deleted. */
  version(): Promise<string> {
    return this.insertions();
  }
}

function policyText(policy: CertificatePolicy | null): string | null {
  return policy === null ? null : JSON.stringify({ authority: policy.authority, private_key_type: policy.privateKeyType, set_at: policy.setAt });
}

function toReservedDomain(row: Row): ReservedDomain {
  const policy = row.certificate_policy === null ? null : (JSON.parse(row.certificate_policy) as { authority: 'letsencrypt'; private_key_type: 'rsa' | 'ecdsa'; set_at: string });
  return {
    id: row.id,
    accountId: row.account_id,
    domain: row.domain,
    region: row.region,
    description: row.description,
    metadata: row.metadata,
    certificatePolicy: policy && { authority: policy.authority, privateKeyType: policy.private_key_type, setAt: policy.set_at },
    createdAt: row.created_at,
  };
}
