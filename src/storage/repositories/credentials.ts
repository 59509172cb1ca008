import type { Selectable } from 'kysely';
import type { Credential, CredentialChanges, CredentialRepository } from '../../domain/credentials/types.js';
import type { Page, PageOf } from '../../domain/paging.js';
import type { Store } from '../db.js';
import type { CredentialsTable } from '../schema.js';

const COLUMNS = ['id', 'account_id', 'owner_id', 'description', 'metadata', 'acl', 'created_at'] as const;

export class SqlCredentialRepository implements CredentialRepository {
  constructor(private readonly store: Store) {}

  async insert(credential: Credential, tokenHash: string): Promise<void> {
    await this.store.db
      .insertInto('credentials')
      .values({
        id: credential.id,
        account_id: credential.accountId,
        owner_id: credential.ownerId,
        description: credential.description,
        metadata: credential.metadata,
        acl: JSON.stringify(credential.acl),
        token_hash: tokenHash,
        created_at: credential.createdAt,
      })
      .execute();
    await this.store.durable();
  }

  async get(accountId: string, id: string): Promise<Credential | undefined> {
    const row = await this.store.db
      .selectFrom('credentials')
      .select(COLUMNS)
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row && toCredential(row);
  }

  async listPage(accountId: string, page: Page): Promise<PageOf<Credential>> {
    let query = this.store.db.selectFrom('credentials').select(COLUMNS).where('account_id', '=', accountId);
    if (page.beforeId !== undefined) query = query.where('id', '<', page.beforeId);
    const rows = await query.orderBy('id', 'desc').limit(page.limit + 1).execute();
    const hasMore = rows.length > page.limit;
    return { items: rows.slice(0, page.limit).map(toCredential), hasMore };
  }

  async update(accountId: string, id: string, changes: CredentialChanges): Promise<Credential | undefined> {
    const set: Partial<Record<'description' | 'metadata' | 'acl', string>> = {};
    if (changes.description !== undefined) set.description = changes.description;
    if (changes.metadata !== undefined) set.metadata = changes.metadata;
    if (changes.acl !== undefined) set.acl = JSON.stringify(changes.acl);
    if (Object.keys(set).length === 0) return this.get(accountId, id);
    // One statement: concurrent updates of different fields never overwrite each other.
    const row = await this.store.db
      .updateTable('credentials')
      .set(set)
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (row) await this.store.durable();
    return row && toCredential(row);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.store.db
      .deleteFrom('credentials')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    const deleted = result.numDeletedRows > 0n;
    if (deleted) await this.store.durable();
    return deleted;
  }

  async tokenHash(id: string): Promise<string | undefined> {
    const row = await this.store.db.selectFrom('credentials').select('token_hash').where('id', '=', id).executeTakeFirst();
    return row?.token_hash;
  }
}

function toCredential(row: Pick<Selectable<CredentialsTable>, (typeof COLUMNS)[number]>): Credential {
  return {
    id: row.id,
    accountId: row.account_id,
    ownerId: row.owner_id,
    description: row.description,
    metadata: row.metadata,
    acl: JSON.parse(row.acl) as string[],
    createdAt: row.created_at,
  };
}
