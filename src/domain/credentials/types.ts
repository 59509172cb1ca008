import type { Page, PageOf } from '../paging.js';

export interface Credential {
  readonly id: string;
  readonly accountId: string;
  readonly ownerId: string;
  readonly description: string;
  readonly metadata: string;
  readonly acl: readonly string[];
  readonly createdAt: string;
}

export interface CredentialChanges {
  description?: string;
  metadata?: string;
  acl?: readonly string[];
}

export interface CredentialRepository {
  insert(credential: Credential, tokenHash: string): Promise<void>;
  get(accountId: string, id: string): Promise<Credential | undefined>;
  /** Newest first, at most `limit` items, and whether older ones exist. */
  listPage(accountId: string, page: Page): Promise<PageOf<Credential>>;
  /** Applies the changes in one statement and returns the result; undefined when absent. */
  update(accountId: string, id: string, changes: CredentialChanges): Promise<Credential | undefined>;
  delete(accountId: string, id: string): Promise<boolean>;
  /** The token hash of any account's credential, for telling a misused authtoken from a bad key. */
  tokenHash(id: string): Promise<string | undefined>;
}
