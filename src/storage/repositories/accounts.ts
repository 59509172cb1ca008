import type { Selectable } from 'kysely';
import type {
  Account,
  AccountRepository,
  ApiKey,
  Principal,
} from '../../domain/accounts/types.js';
import { param } from '../prepared.js';
import type { AccountsTable, ApiKeysTable, PrincipalsTable } from '../schema.js';
import { inTransaction } from '../transaction.js';
import type { Store } from '../types.js';

/**
 * The repository style every table follows (credentials.ts, tls-edges.ts, …):
 *
 * - a class `Sql<Thing>Repository implements <Thing>Repository` (the interface is declared in
 *   `domain/`), constructed with the `Store`: `new SqlAccountRepository(store)`;
 * - every statement built with Kysely once, in the constructor, with `param('name')` where a
 *   value goes, and compiled by `store.prepare` into `this.statements`; methods only run them
 *   (`first`, `all`, `run`) with a record of values. Prepared writes are durable when they
 *   resolve; on SQLite reads and writes are batched per event-loop turn;
 * - lists are pages of `KeysetPages` (paging.ts): one helper, `id < :before ORDER BY id DESC
 *   LIMIT n + 1`;
 * - statements whose SQL depends on the input (a list of rows of any length) are built with
 *   `store.db` when they run (rate-limit-counts.ts); work spanning statements runs in
 *   `inTransaction(store, …)` (transaction.ts) with a repository built on the transaction;
 * - rows are mapped to domain objects by a plain function at the bottom of the file.
 *
 * The CLI's lists (all accounts, principals, keys) are short and ordered oldest first, so
 * they are unpaged.
 */
export class SqlAccountRepository implements AccountRepository {
  private readonly statements;

  constructor(private readonly store: Store) {
    const db = store.db;
    const revoke = (table: 'accounts' | 'principals' | 'api_keys') =>
      store.prepare(
        db
          .updateTable(table)
          .set({ revoked_at: param('at') })
          .where('id', '=', param('id'))
          .where('revoked_at', 'is', null),
      );
    this.statements = {
      insertAccount: store.prepare(
        db.insertInto('accounts').values({ id: param('id'), name: param('name'), created_at: param('createdAt'), revoked_at: param<string | null>('revokedAt') }),
      ),
      listAccounts: store.prepare(db.selectFrom('accounts').selectAll().orderBy('id')),
      getAccount: store.prepare(db.selectFrom('accounts').selectAll().where('id', '=', param('id'))),
      revokeAccount: revoke('accounts'),
      insertPrincipal: store.prepare(
        db.insertInto('principals').values({
          id: param('id'),
          account_id: param('account'),
          kind: param<Principal['kind']>('kind'),
          name: param('name'),
          admin: param<number>('admin'),
          created_at: param('createdAt'),
          revoked_at: param<string | null>('revokedAt'),
        }),
      ),
      getPrincipal: store.prepare(db.selectFrom('principals').selectAll().where('id', '=', param('id'))),
      listPrincipals: store.prepare(db.selectFrom('principals').selectAll().orderBy('id')),
      listAccountPrincipals: store.prepare(db.selectFrom('principals').selectAll().where('account_id', '=', param('account')).orderBy('id')),
      setAdmin: store.prepare(db.updateTable('principals').set({ admin: param<number>('admin') }).where('id', '=', param('id'))),
      revokePrincipal: revoke('principals'),
      insertApiKey: store.prepare(
        db.insertInto('api_keys').values({
          id: param('id'),
          account_id: param('account'),
          owner_id: param('owner'),
          description: param('description'),
          secret_hash: param('secretHash'),
          display_prefix: param('displayPrefix'),
          created_at: param('createdAt'),
          revoked_at: param<string | null>('revokedAt'),
        }),
      ),
      listApiKeys: store.prepare(db.selectFrom('api_keys').selectAll().orderBy('id')),
      listAccountApiKeys: store.prepare(db.selectFrom('api_keys').selectAll().where('account_id', '=', param('account')).orderBy('id')),
      revokeApiKey: revoke('api_keys'),
    };
  }

  async insertAccount(account: Account): Promise<void> {
    await this.statements.insertAccount.run({ id: account.id, name: account.name, createdAt: account.createdAt, revokedAt: account.revokedAt });
  }

  async listAccounts(): Promise<Account[]> {
    return (await this.statements.listAccounts.all({})).map(toAccount);
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const row = await this.statements.getAccount.first({ id });
    return row && toAccount(row);
  }

  async revokeAccount(id: string, at: string): Promise<boolean> {
    return (await this.statements.revokeAccount.run({ id, at })) > 0;
  }

  async insertPrincipal(principal: Principal): Promise<void> {
    await this.statements.insertPrincipal.run({
      id: principal.id,
      account: principal.accountId,
      kind: principal.kind,
      name: principal.name,
      admin: principal.admin ? 1 : 0,
      createdAt: principal.createdAt,
      revokedAt: principal.revokedAt,
    });
  }

  async getPrincipal(id: string): Promise<Principal | undefined> {
    const row = await this.statements.getPrincipal.first({ id });
    return row && toPrincipal(row);
  }

  async listPrincipals(accountId: string | undefined): Promise<Principal[]> {
    const rows =
      accountId === undefined ? await this.statements.listPrincipals.all({}) : await this.statements.listAccountPrincipals.all({ account: accountId });
    return rows.map(toPrincipal);
  }

  async setAdmin(id: string, admin: boolean): Promise<boolean> {
    return (await this.statements.setAdmin.run({ id, admin: admin ? 1 : 0 })) > 0;
  }

  async revokePrincipal(id: string, at: string): Promise<boolean> {
    return (await this.statements.revokePrincipal.run({ id, at })) > 0;
  }

  async insertApiKey(key: ApiKey, secretHash: string): Promise<void> {
    await this.statements.insertApiKey.run({
      id: key.id,
      account: key.accountId,
      owner: key.ownerId,
      description: key.description,
      secretHash,
      displayPrefix: key.displayPrefix,
      createdAt: key.createdAt,
      revokedAt: key.revokedAt,
    });
  }

  async listApiKeys(accountId: string | undefined): Promise<ApiKey[]> {
    const rows =
      accountId === undefined ? await this.statements.listApiKeys.all({}) : await this.statements.listAccountApiKeys.all({ account: accountId });
    return rows.map(toApiKey);
  }

  async revokeApiKey(id: string, at: string): Promise<boolean> {
    return (await this.statements.revokeApiKey.run({ id, at })) > 0;
  }

  async bootstrapOnce(create: (repository: AccountRepository) => Promise<string>): Promise<'created' | 'had-accounts' | 'done'> {
    return inTransaction(this.store, async (transactional) => {
      const now = new Date().toISOString().slice(0, 19) + 'Z';
      // Concurrent starts on one database: the second insert waits for the first and then does nothing.
      const claimed = await transactional.db
        .insertInto('bootstrap')
        .values({ id: 1, account_id: '', created_at: now })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .executeTakeFirst();
      if ((claimed.numInsertedOrUpdatedRows ?? 0n) === 0n) return 'done';
      // accounts made before the first start (with the CLI): the database is not empty, so no
      // second account; the row still records that the bootstrap is over
      const existing = await transactional.db.selectFrom('accounts').select('id').orderBy('id').limit(1).executeTakeFirst();
      if (existing) {
        await transactional.db.updateTable('bootstrap').set({ account_id: existing.id }).where('id', '=', 1).execute();
        return 'had-accounts';
      }
      const accountId = await create(new SqlAccountRepository(transactional));
      await transactional.db.updateTable('bootstrap').set({ account_id: accountId }).where('id', '=', 1).execute();
      return 'created';
    });
  }
}

function toAccount(row: Selectable<AccountsTable>): Account {
  return { id: row.id, name: row.name, createdAt: row.created_at, revokedAt: row.revoked_at };
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
