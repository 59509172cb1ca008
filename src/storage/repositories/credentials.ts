import type { Credential, CredentialChanges, CredentialRepository } from '../../domain/credentials/types.js';
import type { Page, PageOf } from '../../domain/paging.js';
import { param } from '../prepared.js';
import type { CredentialsTable } from '../schema.js';
import type { Store } from '../types.js';
import { KeysetPages } from './paging.js';

const COLUMNS = ['id', 'owner_id', 'description', 'metadata', 'acl', 'created_at'] as const;

type Row = Pick<CredentialsTable, (typeof COLUMNS)[number]>;

/** Every statement is compiled once (Store.prepare); writes are single statements. */
export class SqlCredentialRepository implements CredentialRepository {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    const scoped = () =>
      db.selectFrom('credentials').select(COLUMNS).where('account_id', '=', param('account'));
    this.statements = {
      insert: store.prepare(
        db.insertInto('credentials').values({
          id: param('id'),
          account_id: param('account'),
          owner_id: param('owner'),
          description: param('description'),
          metadata: param('metadata'),
          acl: param('acl'),
          token_hash: param('tokenHash'),
          created_at: param('createdAt'),
        }),
      ),
      get: store.prepare(scoped().where('id', '=', param('id'))),
      list: new KeysetPages(store, scoped),
      // Absent fields are passed as NULL and keep their value: one statement for every PATCH,
      // so concurrent updates of different fields never overwrite each other.
      update: store.prepare(
        db
          .updateTable('credentials')
          .set((eb) => ({
            description: eb.fn.coalesce(eb.val(param<string | null>('description')), eb.ref('description')),
            metadata: eb.fn.coalesce(eb.val(param<string | null>('metadata')), eb.ref('metadata')),
            acl: eb.fn.coalesce(eb.val(param<string | null>('acl')), eb.ref('acl')),
          }))
          .where('id', '=', param('id'))
          .where('account_id', '=', param('account'))
          .returning(COLUMNS),
      ),
      delete: store.prepare(db.deleteFrom('credentials').where('id', '=', param('id')).where('account_id', '=', param('account'))),
      tokenHash: store.prepare(db.selectFrom('credentials').select('token_hash').where('id', '=', param('id'))),
    };
  }

  async insert(credential: Credential, tokenHash: string): Promise<void> {
    await this.statements.insert.run({
      id: credential.id,
      account: credential.accountId,
      owner: credential.ownerId,
      description: credential.description,
      metadata: credential.metadata,
      acl: JSON.stringify(credential.acl),
      tokenHash,
      createdAt: credential.createdAt,
    });
  }

  async get(accountId: string, id: string): Promise<Credential | undefined> {
    const row = await this.statements.get.first({ account: accountId, id });
    return row && toCredential(row, accountId);
  }

  async listPage(accountId: string, page: Page): Promise<PageOf<Credential>> {
    return this.statements.list.fetch({ account: accountId }, page, (row) => toCredential(row, accountId));
  }

  async update(accountId: string, id: string, changes: CredentialChanges): Promise<Credential | undefined> {
    if (changes.description === undefined && changes.metadata === undefined && changes.acl === undefined) {
      return this.get(accountId, id);
    }
    const row = await this.statements.update.first({
      account: accountId,
      id,
      description: changes.description ?? null,
      metadata: changes.metadata ?? null,
      acl: changes.acl === undefined ? null : JSON.stringify(changes.acl),
    });
    return row && toCredential(row, accountId);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.statements.delete.run({ account: accountId, id })) > 0;
  }

  async tokenHash(id: string): Promise<string | undefined> {
    return (await this.statements.tokenHash.first({ id }))?.token_hash;
  }
}

function toCredential(row: Row, accountId: string): Credential {
  return {
    id: row.id,
    accountId,
    ownerId: row.owner_id,
    description: row.description,
    metadata: row.metadata,
    acl: JSON.parse(row.acl) as string[],
    createdAt: row.created_at,
  };
}
