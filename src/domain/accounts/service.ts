import { formatTimestamp, isIdOf, newId } from '../ids.js';
import { hashSecret, newSecretFor, secretDisplayPrefix, secretKsuid } from '../secrets.js';
import type { Account, AccountRepository, ApiKey, Principal } from './types.js';

export class AccountAdminError extends Error {}

export interface CreatedApiKey {
  readonly key: ApiKey;
  /** The plaintext key: shown once, never stored. */
  readonly secret: string;
}

export interface BootstrapResult {
  readonly account: Account;
  readonly admin: Principal;
  readonly key: ApiKey;
  /** Undefined when the operator supplied the key: a key they chose is never printed. */
  readonly generatedSecret: string | undefined;
}

/** Operator actions on accounts, users, bots and API keys (the CLI and the first start use them). */
export class AccountService {
  constructor(private readonly repository: AccountRepository) {}

  async createAccount(name: string): Promise<Account> {
    const { id, createdAt } = newId('acct');
    const account: Account = { id, name, createdAt, revokedAt: null };
    await this.repository.insertAccount(account);
    return account;
  }

  listAccounts(): Promise<Account[]> {
    return this.repository.listAccounts();
  }

  async revokeAccount(id: string): Promise<void> {
    if (!(await this.repository.revokeAccount(id, now()))) throw new AccountAdminError(`No active account ${id}.`);
  }

  async createPrincipal(accountId: string, kind: 'user' | 'bot', name: string, admin: boolean): Promise<Principal> {
    const account = await this.repository.getAccount(accountId);
    if (!account || account.revokedAt !== null) {
      throw new AccountAdminError(`No active account ${accountId}.`);
    }
    const { id, createdAt } = newId(kind === 'user' ? 'usr' : 'bot');
    const principal: Principal = { id, accountId, kind, name, admin, createdAt, revokedAt: null };
    await this.repository.insertPrincipal(principal);
    return principal;
  }

  listPrincipals(accountId?: string): Promise<Principal[]> {
    return this.repository.listPrincipals(accountId);
  }

  async setAdmin(principalId: string, admin: boolean, kind: 'user' | 'bot'): Promise<void> {
    await this.activePrincipal(principalId, kind);
    await this.repository.setAdmin(principalId, admin);
  }

  async revokePrincipal(principalId: string, kind?: 'user' | 'bot'): Promise<void> {
    await this.activePrincipal(principalId, kind);
    await this.repository.revokePrincipal(principalId, now());
  }

  /** The principal, if it is of the given kind, unrevoked, and of an unrevoked account. */
  private async activePrincipal(id: string, kind?: 'user' | 'bot'): Promise<Principal> {
    const principal = await this.repository.getPrincipal(id);
    const noun = kind ?? 'user or bot';
    if (!principal || (kind !== undefined && principal.kind !== kind)) throw new AccountAdminError(`No ${noun} ${id}.`);
    if (principal.revokedAt !== null) throw new AccountAdminError(`The ${principal.kind} ${id} is revoked.`);
    const account = await this.repository.getAccount(principal.accountId);
    if (!account || account.revokedAt !== null) throw new AccountAdminError(`The account of ${id} is revoked.`);
    return principal;
  }

  async createApiKey(ownerId: string, description = '', presetSecret?: string): Promise<CreatedApiKey> {
    const owner = await this.activePrincipal(ownerId);
    const { id, createdAt } = presetSecret ? { id: `ak_${secretKsuid(presetSecret)}`, createdAt: now() } : newId('ak');
    const secret = presetSecret ?? newSecretFor(id);
    const key: ApiKey = {
      id,
      accountId: owner.accountId,
      ownerId,
      description,
      displayPrefix: secretDisplayPrefix(secret),
      createdAt,
      revokedAt: null,
    };
    await this.repository.insertApiKey(key, hashSecret(secret));
    return { key, secret };
  }

  listApiKeys(accountId?: string): Promise<ApiKey[]> {
    return this.repository.listApiKeys(accountId);
  }

  async revokeApiKey(id: string): Promise<void> {
    if (!isIdOf(id, 'ak') || !(await this.repository.revokeApiKey(id, now()))) {
      throw new AccountAdminError(`No active API key ${id}.`);
    }
  }

  /**
   * On an empty database: an account, an admin user and one API key (SPEC §4). Runs at most
   * once per database, even when several instances start at the same moment. A database whose
   * accounts were made before the first start (with the CLI) gets nothing: `{ hadAccounts }`.
   */
  async bootstrap(presetSecret?: string): Promise<BootstrapResult | { hadAccounts: true } | undefined> {
    let result: BootstrapResult | undefined;
    const outcome = await this.repository.bootstrapOnce(async (repository) => {
      const inside = new AccountService(repository);
      const account = await inside.createAccount('default');
      const admin = await inside.createPrincipal(account.id, 'user', 'admin', true);
      const { key, secret } = await inside.createApiKey(admin.id, 'bootstrap admin key', presetSecret);
      result = { account, admin, key, generatedSecret: presetSecret ? undefined : secret };
      return account.id;
    });
    return outcome === 'had-accounts' ? { hadAccounts: true } : result;
  }
}

function now(): string {
  return formatTimestamp(Math.floor(Date.now() / 1000));
}
