import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { formatTimestamp, isIdOf, newId } from '../ids.js';
import type { PageOf } from '../paging.js';
import { checkDescription, checkMetadata } from '../text-limits.js';
import { covers, coveringCandidates, reservableDomainProblem, wildcardBase } from './names.js';
import { checkRegion, type ReservationSettings } from './settings.js';
import { certificateStatus, type CertificateStates, type CertificateStatus } from './certificate-status.js';
import type { CertificatePolicy, ReservedDomain, ReservedDomainChanges, ReservedDomainRepository } from './types.js';

export interface CertificatePolicyInput {
  authority?: string | undefined;
  privateKeyType?: string | undefined;
}

export interface ReservedDomainInput {
  domain?: string | undefined;
  region?: string | undefined;
  description?: string | undefined;
  metadata?: string | undefined;
  certificateId?: string | undefined;
  certificatePolicy?: CertificatePolicyInput | undefined;
}

export type { CertificateStatus } from './certificate-status.js';

/** A reserved domain as the API shows it, with what derives from the server's configuration. */
export interface ReservedDomainView extends ReservedDomain {
  /** Where the name's DNS should point: null under EDGE_DOMAIN, or when EDGE_PUBLIC_HOST is an IP. */
  readonly cnameTarget: string | null;
  readonly certificateStatus: CertificateStatus | null;
}

/** `/reserved_domains` (CERTIFICATES.md §0), free of HTTP and SQL. */
export class ReservedDomainService {
  constructor(
    private readonly repository: ReservedDomainRepository,
    private readonly settings: ReservationSettings,
    /** ACME's rows, for the certificate status; none when ACME is off. */
    private readonly certificates?: CertificateStates,
    /** Told of a policy set, so that its certificate is ordered at once (CERTIFICATES.md §1: "when reserved"). */
    private readonly certificateNamesChanged: () => void = () => {},
  ) {}

  async create(caller: Principal, input: ReservedDomainInput): Promise<ReservedDomainView> {
    const domain = checkDomain(input.domain);
    const region = checkRegion(input.region, this.settings);
    const description = checkDescription(input.description ?? '');
    const metadata = checkMetadata(input.metadata ?? '');
    checkNoCertificate(input.certificateId);
    const { id, createdAt } = newId('rd');
    const certificatePolicy = input.certificatePolicy === undefined ? null : checkPolicy(input.certificatePolicy, createdAt);
    await this.checkFree(caller.accountId, domain);
    const reserved: ReservedDomain = { id, accountId: caller.accountId, domain, region, description, metadata, certificatePolicy, createdAt };
    // two creates of one name at once: the unique index lets one in, the other is told who has it
    if (!(await this.repository.insert(reserved))) await this.checkFree(caller.accountId, domain);
    if (certificatePolicy !== null) this.certificateNamesChanged();
    return (await this.views([reserved]))[0]!;
  }

  async get(caller: Principal, id: string): Promise<ReservedDomainView> {
    const found = isIdOf(id, 'rd') ? await this.repository.get(caller.accountId, id) : undefined;
    if (!found) throw errors.notFound();
    return (await this.views([found]))[0]!;
  }

  async list(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<ReservedDomainView>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'rd')) throw errors.invalidBeforeId(beforeId, 'reserved domain');
    const page = await this.repository.listPage(caller.accountId, { beforeId, limit });
    return { items: await this.views(page.items), hasMore: page.hasMore };
  }

  /** Absent fields stay; the domain and region cannot change (the reference's update has neither). */
  async update(caller: Principal, id: string, input: Omit<ReservedDomainInput, 'domain' | 'region'>): Promise<ReservedDomainView> {
    const changes: ReservedDomainChanges = {};
    if (input.description !== undefined) changes.description = checkDescription(input.description);
    if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
    checkNoCertificate(input.certificateId);
    if (input.certificatePolicy !== undefined) changes.certificatePolicy = checkPolicy(input.certificatePolicy, formatTimestamp(Math.floor(Date.now() / 1000)));
    return this.changed(caller, id, changes);
  }

  /** DELETE /reserved_domains/{id}/certificate_management_policy: automatic certificates stop. */
  async removeCertificatePolicy(caller: Principal, id: string): Promise<void> {
    await this.changed(caller, id, { certificatePolicy: null });
  }

  /** DELETE /reserved_domains/{id}/certificate: burrow attaches no uploaded certificate, so there is none to detach. */
  async removeCertificate(caller: Principal, id: string): Promise<void> {
    await this.get(caller, id);
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const deleted = isIdOf(id, 'rd') && (await this.repository.delete(caller.accountId, id));
    if (!deleted) throw errors.notFound();
  }

  private async changed(caller: Principal, id: string, changes: ReservedDomainChanges): Promise<ReservedDomainView> {
    const updated = isIdOf(id, 'rd') ? await this.repository.update(caller.accountId, id, changes) : undefined;
    if (!updated) throw errors.notFound();
    if (changes.certificatePolicy) this.certificateNamesChanged();
    return (await this.views([updated]))[0]!;
  }

  /**
   * 413 when the account has the name; 414 when another account has it or a wildcard of another
   * account covers it; 417 when it is a wildcard covering another account's name.
   */
  private async checkFree(accountId: string, domain: string): Promise<void> {
    const found = await this.repository.matching(coveringCandidates(domain), wildcardBase(domain));
    const exact = found.find((reservation) => reservation.domain === domain);
    if (exact) throw exact.accountId === accountId ? errors.domainReservedByYou(domain) : errors.domainReservedByOther(domain);
    const others = found.filter((reservation) => reservation.accountId !== accountId);
    if (others.some((reservation) => covers(reservation.domain, domain))) throw errors.domainReservedByOther(domain);
    if (others.some((reservation) => covers(domain, reservation.domain))) throw errors.wildcardCoversOther(domain);
  }

  private async views(reserved: readonly ReservedDomain[]): Promise<ReservedDomainView[]> {
    const managed = reserved.filter((each) => each.certificatePolicy !== null).map((each) => each.domain);
    const rows = this.certificates && managed.length > 0 ? await this.certificates.certificatesNamed(managed) : [];
    const byName = new Map(rows.map((row) => [row.name, row]));
    return reserved.map((each) => ({
      ...each,
      cnameTarget: cnameTarget(each.domain, this.settings),
      certificateStatus: certificateStatus(each.domain, each.certificatePolicy, { configured: this.settings.acmeConfigured, dnsHook: this.settings.acmeDnsHook ?? false }, byName.get(each.domain)),
    }));
  }
}

function checkDomain(domain: string | undefined): string {
  if (domain === undefined || domain === '') throw errors.invalidField('domain', 'is required: give the name to reserve, such as "app.example.com" or "*.example.com"');
  const problem = reservableDomainProblem(domain);
  if (problem) throw errors.invalidField('domain', `is not a domain that can be reserved: ${problem}`);
  return domain.toLowerCase();
}

function checkNoCertificate(certificateId: string | undefined): void {
  if (certificateId === undefined || certificateId === '') return;
  throw errors.invalidField(
    'certificate_id',
    'names an uploaded certificate, which this burrow server does not serve; leave it out (give certificate_management_policy for automatic certificates)',
  );
}

function checkPolicy(input: CertificatePolicyInput, setAt: string): CertificatePolicy {
  const authority = input.authority === undefined || input.authority === '' ? 'letsencrypt' : input.authority;
  if (authority !== 'letsencrypt') {
    throw errors.invalidField('certificate_management_policy.authority', 'must be "letsencrypt" (meaning the ACME CA this server is configured with)');
  }
  const keyType = input.privateKeyType === undefined || input.privateKeyType === '' ? 'rsa' : input.privateKeyType;
  if (keyType !== 'rsa' && keyType !== 'ecdsa') throw errors.invalidField('certificate_management_policy.private_key_type', 'must be "rsa" or "ecdsa"');
  return { authority, privateKeyType: keyType, setAt };
}

function cnameTarget(domain: string, settings: ReservationSettings): string | null {
  const name = domain.startsWith('*.') ? domain.slice(2) : domain;
  if (name === settings.edgeDomain || name.endsWith(`.${settings.edgeDomain}`)) return null;
  // a CNAME names a host, never an address: with an IP, the operator's DNS needs an A record
  return /^[0-9.]+$/.test(settings.publicHost) ? null : settings.publicHost;
}
