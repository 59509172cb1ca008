import { errors } from '../errors.js';

/** What reservations depend on in the server's configuration (TUNNELS.md §1, CERTIFICATES.md §0). */
export interface ReservationSettings {
  /** REGION: the only region burrow serves. */
  readonly region: string;
  readonly edgeDomain: string;
  readonly publicHost: string;
  readonly tcpPorts: readonly { readonly first: number; readonly last: number }[];
  /** Whether an ACME CA is configured (CERTIFICATES.md §1); off until then. */
  readonly acmeConfigured: boolean;
  /** Whether ACME_DNS_HOOK is set: wildcard reservations need it (dns-01). */
  readonly acmeDnsHook?: boolean;
}

/**
 * `region` of a create body: absent or empty is the server's REGION; burrow serves that one
 * region only, so any other is refused by name rather than stored as a promise it cannot keep.
 */
export function checkRegion(region: string | undefined, settings: ReservationSettings): string {
  if (region === undefined || region === '' || region === settings.region) return settings.region;
  throw errors.invalidField('region', `is ${JSON.stringify(region.slice(0, 32))}, but this burrow server serves the region ${JSON.stringify(settings.region)} only; leave region out or give that one`);
}
