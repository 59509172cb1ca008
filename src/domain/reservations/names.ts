import { bindHostnameProblem } from '../acl.js';
import type { NameReservation } from './types.js';

/**
 * Names and the wildcards that cover them, as SPEC §5.3's ACL wildcard does: `*.example.com`
 * covers itself and every name ending in `.example.com` (at any depth), not `example.com`.
 */
export function covers(reserved: string, name: string): boolean {
  return reserved === name || (reserved.startsWith('*.') && name.endsWith(reserved.slice(1)));
}

/**
 * Every reservation that could cover `name`: itself and the wildcard of each parent domain of
 * two labels or more (`a.b.example.com` → `*.b.example.com`, `*.example.com`).
 */
export function coveringCandidates(name: string): string[] {
  const labels = (name.startsWith('*.') ? name.slice(2) : name).split('.');
  const candidates = [name];
  for (let i = 1; i <= labels.length - 2; i++) candidates.push(`*.${labels.slice(i).join('.')}`);
  return candidates;
}

/** The domain under which a wildcard's names lie (`*.example.com` → `example.com`), else undefined. */
export function wildcardBase(name: string): string | undefined {
  return name.startsWith('*.') ? name.slice(2) : undefined;
}

/** The reservation that decides who holds `name`: the most specific one covering it. */
export function holderOf(name: string, reservations: readonly NameReservation[]): NameReservation | undefined {
  let best: NameReservation | undefined;
  for (const reservation of reservations) {
    if (!covers(reservation.domain, name)) continue;
    if (!best || specificity(reservation.domain) > specificity(best.domain)) best = reservation;
  }
  return best;
}

// An exact name beats every wildcard; a longer wildcard beats a shorter one.
function specificity(domain: string): number {
  return domain.startsWith('*.') ? domain.length : Number.MAX_SAFE_INTEGER;
}

/** Why `domain` cannot be reserved (SPEC §5.3's domain, a leading `*.` allowed), or null. */
export function reservableDomainProblem(domain: string): string | null {
  const problem = bindHostnameProblem(domain, { wildcard: true });
  if (problem) return problem;
  // the grammar's domain is names, not addresses: an IPv4 host is not a domain one can reserve
  if (/^[0-9.]+$/.test(domain)) return `${JSON.stringify(domain)} is an IP address; reserve a domain name such as "app.example.com".`;
  return null;
}
