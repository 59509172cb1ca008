import type { AccountRepository, Principal } from '../accounts/types.js';
import { validateAcl } from '../acl.js';
import { errors } from '../errors.js';
import { isIdOf, newId } from '../ids.js';
import { hashSecret, newSecretFor } from '../secrets.js';
import type { PageOf } from '../paging.js';
import type { Credential, CredentialChanges, CredentialRepository } from './types.js';
import { checkDescription, checkMetadata } from '../text-limits.js';

export interface CreateCredentialInput {
  description?: string | undefined;
  metadata?: string | undefined;
  acl?: readonly string[] | undefined;
  ownerId?: string | undefined;
}

export interface OwnerDirectory {
  /** True when `id` is an active user or bot of the account. */
  isActiveMember(accountId: string, id: string): Promise<boolean>;
}

/** Owners are the account's active users and bots. */
export function ownerDirectory(accounts: Pick<AccountRepository, 'getPrincipal'>): OwnerDirectory {
  return {
    isActiveMember: async (accountId, id) => {
      const principal = await accounts.getPrincipal(id);
      return principal !== undefined && principal.accountId === accountId && principal.revokedAt === null;
    },
  };
}

/** The rules of SPEC §5 for tunnel credentials, free of HTTP and SQL. */
export class CredentialService {
  constructor(
    private readonly repository: CredentialRepository,
    private readonly owners: OwnerDirectory,
  ) {}

  /** Returns the credential and its token; the token exists nowhere else afterwards. */
  async create(caller: Principal, input: CreateCredentialInput): Promise<{ credential: Credential; token: string }> {
    const description = checkDescription(input.description ?? '');
    const metadata = checkMetadata(input.metadata ?? '');
    const acl = checkedAcl(input.acl ?? []);
    const ownerId = await this.resolveOwner(caller, input.ownerId);

    const { id, createdAt } = newId('cr');
    const token = newSecretFor(id);
    const credential: Credential = { id, accountId: caller.accountId, ownerId, description, metadata, acl, createdAt };
    await this.repository.insert(credential, hashSecret(token));
    return { credential, token };
  }

  async get(caller: Principal, id: string): Promise<Credential> {
    const credential = isIdOf(id, 'cr') ? await this.repository.get(caller.accountId, id) : undefined;
    if (!credential) throw errors.notFound();
    return credential;
  }

  list(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<Credential>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'cr')) throw errors.invalidBeforeId(beforeId, 'credential');
    return this.repository.listPage(caller.accountId, { beforeId, limit });
  }

  async update(caller: Principal, id: string, input: CredentialChanges): Promise<Credential> {
    const changes: CredentialChanges = {};
    if (input.description !== undefined) changes.description = checkDescription(input.description);
    if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
    if (input.acl !== undefined) changes.acl = checkedAcl(input.acl);
    const updated = isIdOf(id, 'cr') ? await this.repository.update(caller.accountId, id, changes) : undefined;
    if (!updated) throw errors.notFound();
    return updated;
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const deleted = isIdOf(id, 'cr') && (await this.repository.delete(caller.accountId, id));
    if (!deleted) throw errors.notFound();
  }

  /**
   * SPEC §5.2 and §3.1: absent or "" means the caller; a non-admin naming anyone else gets 630
   * whether or not that owner exists; an admin naming a stranger gets 634.
   */
  private async resolveOwner(caller: Principal, ownerId: string | undefined): Promise<string> {
    if (ownerId === undefined || ownerId === '' || ownerId === caller.id) return caller.id;
    if (!caller.admin) throw errors.ownerNotPermitted();
    const known = isIdOf(ownerId, 'usr', 'bot') && (await this.owners.isActiveMember(caller.accountId, ownerId));
    if (!known) throw errors.ownerUnknown(ownerId);
    return ownerId;
  }
}

function checkedAcl(acl: readonly string[]): readonly string[] {
  const check = validateAcl(acl);
  if (!check.ok) throw errors.invalidAcl(check.message);
  return [...acl];
}
