import type { Page, PageOf } from '../paging.js';

/** An active API key as the /api_keys resource shows it (CONSOLE.md §2). */
export interface ApiKeyResource {
  readonly id: string;
  readonly accountId: string;
  readonly ownerId: string;
  readonly description: string;
  readonly metadata: string;
  readonly createdAt: string;
}

export interface ApiKeyChanges {
  description?: string;
  metadata?: string;
}

/**
 * Which keys a caller may see: the account's, narrowed to one owner's for a non-admin.
 * Revoked keys (CLI `revoke`, REST `DELETE`) are never seen.
 */
export interface ApiKeyScope {
  readonly accountId: string;
  readonly ownerId: string | undefined;
}

export interface ApiKeyRepository {
  insert(key: ApiKeyResource, secretHash: string, displayPrefix: string): Promise<void>;
  get(scope: ApiKeyScope, id: string): Promise<ApiKeyResource | undefined>;
  listPage(scope: ApiKeyScope, page: Page): Promise<PageOf<ApiKeyResource>>;
  update(scope: ApiKeyScope, id: string, changes: ApiKeyChanges): Promise<ApiKeyResource | undefined>;
  /** Sets revoked_at (the CLI's revoke on the same row); false when absent or already revoked. */
  revoke(scope: ApiKeyScope, id: string, at: string): Promise<boolean>;
}
