import type { Page, PageOf } from '../paging.js';

/**
 * A reserved domain's certificate management policy (CERTIFICATES.md §0): `letsencrypt` means
 * the configured ACME CA. `setAt` is when it was set, the start of its provisioning.
 */
export interface CertificatePolicy {
  readonly authority: 'letsencrypt';
  readonly privateKeyType: 'rsa' | 'ecdsa';
  readonly setAt: string;
}

/** A name (or `*.` wildcard) that only its account may bind. */
export interface ReservedDomain {
  readonly id: string;
  readonly accountId: string;
  /** Lower-case; `*.example.com` covers the names under example.com. */
  readonly domain: string;
  readonly region: string;
  readonly description: string;
  readonly metadata: string;
  readonly certificatePolicy: CertificatePolicy | null;
  readonly createdAt: string;
}

/** A TCP port of EDGE_TCP_PORTS that only its account may bind. */
export interface ReservedAddr {
  readonly id: string;
  readonly accountId: string;
  readonly port: number;
  readonly region: string;
  readonly description: string;
  readonly metadata: string;
  readonly createdAt: string;
}

/** Who holds a name: what binds and new reservations are checked against. */
export interface NameReservation {
  readonly accountId: string;
  readonly domain: string;
}

export interface ReservedDomainChanges {
  description?: string;
  metadata?: string;
  /** null removes the policy. */
  certificatePolicy?: CertificatePolicy | null;
}

export interface ReservedAddrChanges {
  description?: string;
  metadata?: string;
}

export interface ReservedDomainRepository {
  /** Inserts unless the domain is reserved already (by anyone); false when it is. */
  insert(domain: ReservedDomain): Promise<boolean>;
  get(accountId: string, id: string): Promise<ReservedDomain | undefined>;
  listPage(accountId: string, page: Page): Promise<PageOf<ReservedDomain>>;
  update(accountId: string, id: string, changes: ReservedDomainChanges): Promise<ReservedDomain | undefined>;
  delete(accountId: string, id: string): Promise<boolean>;
  /** Reservations of any account whose domain is one of `domains`, or ends in `.${under}`. */
  matching(domains: readonly string[], under: string | undefined): Promise<NameReservation[]>;
}

export interface ReservedAddrRepository {
  /** Inserts unless the port is reserved already; false when it is. */
  insert(addr: ReservedAddr): Promise<boolean>;
  get(accountId: string, id: string): Promise<ReservedAddr | undefined>;
  listPage(accountId: string, page: Page): Promise<PageOf<ReservedAddr>>;
  update(accountId: string, id: string, changes: ReservedAddrChanges): Promise<ReservedAddr | undefined>;
  delete(accountId: string, id: string): Promise<boolean>;
  /** Ports no new reservation may take: reserved by anyone, or bound now by any tunnel. */
  unavailablePorts(): Promise<ReadonlySet<number>>;
  /** The account holding each of `ports` that is reserved. */
  owners(ports: readonly number[]): Promise<ReadonlyMap<number, string>>;
  /** Every reserved port, of any account. */
  reservedPorts(): Promise<ReadonlySet<number>>;
}
