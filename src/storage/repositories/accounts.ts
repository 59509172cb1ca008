import type { Kysely, Selectable } from 'kysely';
import type {
  Account,
  AccountRepository,
  ApiKey,
  Principal,
} from '../../domain/accounts/types.js';
import type { Store } from '../db.js';
import type { ApiKeysTable, PrincipalsTable, SchemaTables } from '../schema.js';

export class SqlAccountRepository implements AccountRepository {
  constructor(
    private readonly db: Kysely<SchemaTables>,
    private readonly durable: () => Promise<void>,
  ) {}

  static of(store: Store): SqlAccountRepository {
    return new SqlAccountRepository(store.db, () => store.durable());
  }

  async insertAccount(account: Account): Promise<void> {
    await this.db
      .insertInto('accounts')
      .values({ id: account.id, name: account.name, created_at: account.createdAt, revoked_at: account.revokedAt })
      .execute();
    await this.durable();
  }

  async listAccounts(): Promise<Account[]> {
    const rows = await this.db.selectFrom('accounts').selectAll().orderBy('id').execute();
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at, revokedAt: r.revoked_at }));
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && { id: row.id, name: row.name, createdAt: row.created_at, revokedAt: row.revoked_at };
  }

  async revokeAccount(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('accounts')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await this.durable();
    return result.numUpdatedRows > 0n;
  }

  async insertPrincipal(principal: Principal): Promise<void> {
    await this.db
      .insertInto('principals')
      .values({
        id: principal.id,
        account_id: principal.accountId,
        kind: principal.kind,
        name: principal.name,
        admin: principal.admin ? 1 : 0,
        created_at: principal.createdAt,
        revoked_at: principal.revokedAt,
      })
      .execute();
    await this.durable();
  }

  async getPrincipal(id: string): Promise<Principal | undefined> {
    const row = await this.db.selectFrom('principals').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toPrincipal(row);
  }

  async listPrincipals(accountId: string | undefined): Promise<Principal[]> {
    let query = this.db.selectFrom('principals').selectAll();
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    return (await query.orderBy('id').execute()).map(toPrincipal);
  }

  async setAdmin(id: string, admin: boolean): Promise<boolean> {
    const result = await this.db
      .updateTable('principals')
      .set({ admin: admin ? 1 : 0 })
      .where('id', '=', id)
      .executeTakeFirst();
    await this.durable();
    return result.numUpdatedRows > 0n;
  }

  async revokePrincipal(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('principals')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await this.durable();
    return result.numUpdatedRows > 0n;
  }

  async insertApiKey(key: ApiKey, secretHash: string): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        owner_id: key.ownerId,
        description: key.description,
        secret_hash: secretHash,
        display_prefix: key.displayPrefix,
        created_at: key.createdAt,
        revoked_at: key.revokedAt,
      })
      .execute();
    await this.durable();
  }

  async listApiKeys(accountId: string | undefined): Promise<ApiKey[]> {
    let query = this.db.selectFrom('api_keys').selectAll();
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    return (await query.orderBy('id').execute()).map(toApiKey);
  }

  async revokeApiKey(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await this.durable();
    return result.numUpdatedRows > 0n;
  }

  async bootstrapOnce(create: (repository: AccountRepository) => Promise<string>): Promise<boolean> {
    const ran = await this.db.transaction().execute(async (trx) => {
      const now = new Date().toISOString().slice(0, 19) + 'Z';
      // Concurrent starts on one database: the second insert waits for the first and then does nothing.
      const claimed = await trx
        .insertInto('bootstrap')
        .values({ id: 1, account_id: '', created_at: now })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .executeTakeFirst();
      if ((claimed.numInsertedOrUpdatedRows ?? 0n) === 0n) return false;
      const accountId = await create(new SqlAccountRepository(trx, async () => {}));
      await trx.updateTable('bootstrap').set({ account_id: accountId }).where('id', '=', 1).execute();
      return true;
    });
    if (ran) await this.durable();
    return ran;
  }
}

export function toPrincipal(row: Selectable<PrincipalsTable>): Principal {
  return {
    id: row.id,
    accountId: row.account_id,
    kind: row.kind,
    name: row.name,
    admin: Number(row.admin) === 1,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

function toApiKey(row: Selectable<ApiKeysTable>): ApiKey {
  return {
    id: row.id,
    accountId: row.account_id,
    ownerId: row.owner_id,
    description: row.description,
    displayPrefix: row.display_prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}
