import { resolveOwner, type OwnerDirectory } from '../accounts/owners.js';
import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { formatTimestamp, isIdOf, newId } from '../ids.js';
import type { PageOf } from '../paging.js';
import { hashSecret, newSecretFor, secretDisplayPrefix } from '../secrets.js';
import { checkDescription, checkMetadata } from '../text-limits.js';
import type { ApiKeyChanges, ApiKeyRepository, ApiKeyResource, ApiKeyScope } from './types.js';

export interface CreateApiKeyInput {
  description?: string | undefined;
  metadata?: string | undefined;
  ownerId?: string | undefined;
}

/**
 * The /api_keys resource (CONSOLE.md §2): admins manage every key of the account, others only
 * their own (another owner's key is 404, as another account's). Deleting revokes the row, which
 * the authenticator stops accepting within its cache's 0.9 s.
 */
export class ApiKeyService {
  constructor(
    private readonly repository: ApiKeyRepository,
    private readonly owners: OwnerDirectory,
  ) {}

  /** Returns the key and its secret; the secret exists nowhere else afterwards. */
  async create(caller: Principal, input: CreateApiKeyInput): Promise<{ key: ApiKeyResource; token: string }> {
    const description = checkDescription(input.description ?? '');
    const metadata = checkMetadata(input.metadata ?? '');
    const ownerId = await resolveOwner(caller, input.ownerId, this.owners, 'API key');
    const { id, createdAt } = newId('ak');
    const token = newSecretFor(id);
    const key: ApiKeyResource = { id, accountId: caller.accountId, ownerId, description, metadata, createdAt };
    await this.repository.insert(key, hashSecret(token), secretDisplayPrefix(token));
    return { key, token };
  }

  async get(caller: Principal, id: string): Promise<ApiKeyResource> {
    const key = isIdOf(id, 'ak') ? await this.repository.get(scopeOf(caller), id) : undefined;
    if (!key) throw errors.notFound();
    return key;
  }

  list(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<ApiKeyResource>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'ak')) throw errors.invalidBeforeId(beforeId, 'API key');
    return this.repository.listPage(scopeOf(caller), { beforeId, limit });
  }

  async update(caller: Principal, id: string, input: ApiKeyChanges): Promise<ApiKeyResource> {
    const changes: ApiKeyChanges = {};
    if (input.description !== undefined) changes.description = checkDescription(input.description);
    if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
    const updated = isIdOf(id, 'ak') ? await this.repository.update(scopeOf(caller), id, changes) : undefined;
    if (!updated) throw errors.notFound();
    return updated;
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const at = formatTimestamp(Math.floor(Date.now() / 1000));
    const revoked = isIdOf(id, 'ak') && (await this.repository.revoke(scopeOf(caller), id, at));
    if (!revoked) throw errors.notFound();
  }
}

function scopeOf(caller: Principal): ApiKeyScope {
  return { accountId: caller.accountId, ownerId: caller.admin ? undefined : caller.id };
}
