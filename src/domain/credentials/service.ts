import { resolveOwner, type OwnerDirectory } from '../accounts/owners.js';
import type { Principal } from '../accounts/types.js';
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
    const ownerId = await resolveOwner(caller, input.ownerId, this.owners, 'credential');

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
}

function checkedAcl(acl: readonly string[]): readonly string[] {
  const check = validateAcl(acl);
  if (!check.ok) throw errors.invalidAcl(check.message);
  return [...acl];
}
