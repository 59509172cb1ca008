import { errors } from '../errors.js';
import { isIdOf } from '../ids.js';
import type { AccountRepository, Principal } from './types.js';

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

/**
 * The `owner_id` of a new credential or API key (SPEC §5.2 and §3.1): absent or "" means the
 * caller; a non-admin naming anyone else gets 630 whether or not that owner exists; an admin
 * naming a stranger gets 634.
 */
export async function resolveOwner(
  caller: Principal,
  ownerId: string | undefined,
  owners: OwnerDirectory,
  noun: 'credential' | 'API key',
): Promise<string> {
  if (ownerId === undefined || ownerId === '' || ownerId === caller.id) return caller.id;
  if (!caller.admin) throw errors.ownerNotPermitted(noun);
  const known = isIdOf(ownerId, 'usr', 'bot') && (await owners.isActiveMember(caller.accountId, ownerId));
  if (!known) throw errors.ownerUnknown(ownerId);
  return ownerId;
}
