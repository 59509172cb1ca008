import type { ApiKeyChanges, ApiKeyRepository, ApiKeyResource, ApiKeyScope } from '../../domain/api-keys/types.js';
import type { Page, PageOf } from '../../domain/paging.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';
import { KeysetPages } from './paging.js';

const COLUMNS = ['id', 'account_id', 'owner_id', 'description', 'metadata', 'created_at'] as const;

interface Row {
  id: string;
  account_id: string;
  owner_id: string;
  description: string;
  metadata: string;
  created_at: string;
}

/**
 * The /api_keys resource over the CLI's `api_keys` rows. Every statement comes twice: scoped to
 * the account (admins) and to the account and one owner (everyone else); revoked rows are
 * invisible to both.
 */
export class SqlApiKeyRepository implements ApiKeyRepository {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    const statementsFor = (byOwner: boolean) => {
      const scoped = () => {
        const query = db.selectFrom('api_keys').select(COLUMNS).where('account_id', '=', param('account')).where('revoked_at', 'is', null);
        return byOwner ? query.where('owner_id', '=', param('owner')) : query;
      };
      const update = db
        .updateTable('api_keys')
        .set((eb) => ({
          description: eb.fn.coalesce(eb.val(param<string | null>('description')), eb.ref('description')),
          metadata: eb.fn.coalesce(eb.val(param<string | null>('metadata')), eb.ref('metadata')),
        }))
        .where('id', '=', param('id'))
        .where('account_id', '=', param('account'))
        .where('revoked_at', 'is', null);
      const revoke = db
        .updateTable('api_keys')
        .set({ revoked_at: param('at') })
        .where('id', '=', param('id'))
        .where('account_id', '=', param('account'))
        .where('revoked_at', 'is', null);
      return {
        get: store.prepare(scoped().where('id', '=', param('id'))),
        list: new KeysetPages(store, scoped),
        update: store.prepare((byOwner ? update.where('owner_id', '=', param('owner')) : update).returning(COLUMNS)),
        revoke: store.prepare(byOwner ? revoke.where('owner_id', '=', param('owner')) : revoke),
      };
    };
    this.statements = {
      insert: store.prepare(
        db.insertInto('api_keys').values({
          id: param('id'),
          account_id: param('account'),
          owner_id: param('owner'),
          description: param('description'),
          metadata: param('metadata'),
          secret_hash: param('secretHash'),
          display_prefix: param('displayPrefix'),
          created_at: param('createdAt'),
          revoked_at: null,
        }),
      ),
      account: statementsFor(false),
      owner: statementsFor(true),
    };
  }

  private scoped(scope: ApiKeyScope) {
    const statements = scope.ownerId === undefined ? this.statements.account : this.statements.owner;
    const values = scope.ownerId === undefined ? { account: scope.accountId } : { account: scope.accountId, owner: scope.ownerId };
    return { statements, values };
  }

  async insert(key: ApiKeyResource, secretHash: string, displayPrefix: string): Promise<void> {
    await this.statements.insert.run({
      id: key.id,
      account: key.accountId,
      owner: key.ownerId,
      description: key.description,
      metadata: key.metadata,
      secretHash,
      displayPrefix,
      createdAt: key.createdAt,
    });
  }

  async get(scope: ApiKeyScope, id: string): Promise<ApiKeyResource | undefined> {
    const { statements, values } = this.scoped(scope);
    const row = await statements.get.first({ ...values, id });
    return row && toApiKey(row);
  }

  listPage(scope: ApiKeyScope, page: Page): Promise<PageOf<ApiKeyResource>> {
    const { statements, values } = this.scoped(scope);
    return statements.list.fetch(values, page, toApiKey);
  }

  async update(scope: ApiKeyScope, id: string, changes: ApiKeyChanges): Promise<ApiKeyResource | undefined> {
    if (changes.description === undefined && changes.metadata === undefined) return this.get(scope, id);
    const { statements, values } = this.scoped(scope);
    const row = await statements.update.first({ ...values, id, description: changes.description ?? null, metadata: changes.metadata ?? null });
    return row && toApiKey(row);
  }

  async revoke(scope: ApiKeyScope, id: string, at: string): Promise<boolean> {
    const { statements, values } = this.scoped(scope);
    return (await statements.revoke.run({ ...values, id, at })) > 0;
  }
}

function toApiKey(row: Row): ApiKeyResource {
  return {
    id: row.id,
    accountId: row.account_id,
    ownerId: row.owner_id,
    description: row.description,
    metadata: row.metadata,
    createdAt: row.created_at,
  };
}
