/** A user or bot of an account: the caller behind an API key, and a credential's owner. */
export interface Principal {
  readonly id: string;
  readonly accountId: string;
  readonly kind: 'user' | 'bot';
  readonly name: string;
  readonly admin: boolean;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

export interface Account {
  readonly id: string;
  readonly name: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

export interface ApiKey {
  readonly id: string;
  readonly accountId: string;
  readonly ownerId: string;
  readonly description: string;
  readonly displayPrefix: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

/** What authentication needs about a key: its hash and, if all three are active, who it speaks for. */
export interface KeyForAuthentication {
  readonly secretHash: string;
  readonly principal: Principal;
}

/** The lookup authentication makes on every request that its cache cannot answer. */
export interface ApiKeyLookup {
  /** The key with its owner, only when key, owner and account are all unrevoked. */
  findActiveKey(id: string): Promise<KeyForAuthentication | undefined>;
}

export interface AccountRepository {
  insertAccount(account: Account): Promise<void>;
  listAccounts(): Promise<Account[]>;
  getAccount(id: string): Promise<Account | undefined>;
  revokeAccount(id: string, at: string): Promise<boolean>;
  insertPrincipal(principal: Principal): Promise<void>;
  getPrincipal(id: string): Promise<Principal | undefined>;
  listPrincipals(accountId: string | undefined): Promise<Principal[]>;
  setAdmin(id: string, admin: boolean): Promise<boolean>;
  revokePrincipal(id: string, at: string): Promise<boolean>;
  insertApiKey(key: ApiKey, secretHash: string): Promise<void>;
  listApiKeys(accountId: string | undefined): Promise<ApiKey[]>;
  revokeApiKey(id: string, at: string): Promise<boolean>;
  /**
   * Runs `create` only if the database has never been bootstrapped and holds no account:
   * `created`; `had-accounts` when accounts were made before the first start (nothing created,
   * the bootstrap is over); `done` when an earlier start bootstrapped it.
   */
  bootstrapOnce(create: (repository: AccountRepository) => Promise<string>): Promise<'created' | 'had-accounts' | 'done'>;
}
