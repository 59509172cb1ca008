import { agentErrors, type AgentRefusal } from '../tunnels/agent-errors.js';
import { coveringCandidates, covers, holderOf, wildcardBase } from './names.js';
import type { NameReservation } from './types.js';

/** The settings the rule reads (TUNNELS.md §1 and REQUIRE_RESERVED_NAMES). */
export interface BindReservationSettings {
  readonly requireReservedNames: boolean;
  /** Names under it stay free even when reservations are required. */
  readonly edgeDomain: string;
  readonly publicHost: string;
  readonly region: string;
}

/** A bind's public target, as far as reservations are concerned. */
export type ReservableTarget = { readonly kind: 'hostname'; readonly hostname: string } | { readonly kind: 'tcp'; readonly port: number };

/**
 * Whether reservations let `accountId` bind a hostname (CERTIFICATES.md §0): the most specific
 * reservation covering the name decides (320 when it is another account's); a wildcard bind
 * may not cover another account's name either (its endpoint would answer for that name while
 * the owner is offline); with `requireReservedNames`, a custom name nobody reserved is 319.
 * `reservations` are those that `reservationQuery(hostname)` selects.
 */
export function hostnameReservationRefusal(
  hostname: string,
  accountId: string,
  reservations: readonly NameReservation[],
  settings: BindReservationSettings,
): AgentRefusal | null {
  const holder = holderOf(hostname, reservations);
  if (holder && holder.accountId !== accountId) return agentErrors.domainTaken(hostname, accountId);
  if (reservations.some((reservation) => reservation.accountId !== accountId && covers(hostname, reservation.domain))) {
    return agentErrors.domainTaken(hostname, accountId);
  }
  const underEdgeDomain = hostname.endsWith(`.${settings.edgeDomain}`);
  if (!holder && settings.requireReservedNames && !underEdgeDomain) return agentErrors.nameNotReserved(hostname, accountId);
  return null;
}

/**
 * Whether reservations let `accountId` bind a fixed TCP port: 309 when another account reserved
 * it; with `requireReservedNames`, 307 when nobody did. `owner` is the port's reserving account.
 */
export function addressReservationRefusal(port: number, accountId: string, owner: string | undefined, settings: BindReservationSettings): AgentRefusal | null {
  const address = `${settings.publicHost}:${port}`;
  if (owner !== undefined && owner !== accountId) return agentErrors.addressTaken(address, accountId);
  if (owner === undefined && settings.requireReservedNames) return agentErrors.addressNotReserved(address, accountId, settings.region);
  return null;
}

/** The reservations a hostname bind must see: those covering it, and those under it when it is a wildcard. */
export function reservationQuery(hostname: string): { domains: string[]; under: string | undefined } {
  return { domains: coveringCandidates(hostname), under: wildcardBase(hostname) };
}
