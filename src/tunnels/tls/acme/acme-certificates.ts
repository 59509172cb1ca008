// The ACME certificates this instance serves (CERTIFICATES.md §1): loaded from the database at
// start and by a sweep every minute (what other instances obtained), ordered for names burrow
// serves, renewed when due while the name is still served, the old certificate kept until the
// new one is in. One instance orders a name at a time (a lease on its row); another that wants it
// meanwhile waits for the row to get the certificate.
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { createSecureContext, type SecureContext } from 'node:tls';
import type acme from 'acme-client';
import type { AcmeChallengeType, AcmeConfig } from '../../../config.js';
import { challengeKey, renewalTime, retryTime } from '../../../domain/acme/schedule.js';
import type { AcmeCertificateRow, AcmeKeyType, AcmeRepository, ManagedName } from '../../../domain/acme/types.js';
import { seal, sealingKey, unseal } from '../../../domain/sealing.js';
import type { Logger } from '../../../observability/logger.js';
import type { CertificateSummary } from '../../../domain/certificates/inventory.js';
import { coalescing } from '../coalescing.js';
import { describeCertificate } from '../inventory.js';
import { acmeClient, alpnChallengeCertificate, newAccountKey, orderCertificate } from './acme-order.js';

/** An order not finished by then frees its name for another instance. */
const ORDER_LEASE_MS = 10 * 60_000;
/** How often an instance that found the name claimed by another looks for its certificate. */
const CLAIMED_POLL_MS = 1_000;

export interface AcmeCertificatesOptions {
  readonly config: AcmeConfig;
  readonly repository: AcmeRepository;
  /** TLS_DIR/sealing.key */
  readonly secret: Uint8Array;
  /** This instance's id: the owner of the orders it makes. */
  readonly owner: string;
  /** The challenge types this instance can answer (its ports), in order of preference. */
  readonly challenges: readonly AcmeChallengeType[];
  /** Whether an endpoint here serves `name` now: only such names (and the repository's managed names) are ordered and renewed. */
  readonly serves: (name: string) => boolean;
  /** Names the edge certificate covers: never ordered (but for `always`). */
  readonly covered: (name: string) => boolean;
  /** Names ordered and renewed whatever is bound: `*.EDGE_DOMAIN` with a DNS hook. */
  readonly always: readonly string[];
  readonly logger: Logger;
  readonly observeOrder?: (result: 'issued' | 'failed') => void;
}

interface Served {
  readonly context: SecureContext;
  readonly certPem: string;
  readonly notAfter: number;
  readonly keyType: AcmeKeyType;
}

export class AcmeCertificates {
  private readonly served = new Map<string, Served>();
  private readonly orders = new Map<string, Promise<void>>();
  private readonly key: Buffer;
  private client: Promise<acme.Client> | undefined;
  private alpnKey: Promise<string> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The last sweep's managed names that are ordered (a wildcard only with a DNS hook). */
  private managed = new Map<string, ManagedName>();
  private readonly warnedWildcards = new Set<string>();
  private readonly sweepCoalesced = coalescing(() => this.sweep());

  constructor(private readonly options: AcmeCertificatesOptions) {
    this.key = sealingKey(options.secret, 'acme');
  }

  /** The certificate obtained for `name`, or for the one-label wildcard covering it, if any (expired ones are not served). */
  contextFor(name: string): SecureContext | undefined {
    const now = Date.now();
    const dot = name.indexOf('.');
    for (const candidate of dot > 0 ? [name, `*${name.slice(dot)}`] : [name]) {
      const served = this.served.get(candidate);
      if (served && served.notAfter > now) return served.context;
    }
    return undefined;
  }

  /** What is served, for /metrics (burrow_certificate_expiry_seconds). */
  summaries(): CertificateSummary[] {
    return [...this.served.values()].map((served) => describeCertificate(served.certPem, 'acme'));
  }

  /**
   * Orders a certificate for `name` unless one is served, being ordered, or waiting for its retry;
   * resolves when that is settled. Callers check that burrow serves the name (no amplification).
   */
  want(name: string): Promise<void> {
    if (isIP(name) !== 0) return Promise.resolve(); // certificates for addresses are not ordered
    if (this.underOrderedWildcard(name)) return Promise.resolve(); // the wildcard's certificate serves it
    let order = this.orders.get(name);
    if (!order) {
      order = this.orderIfDue(name).finally(() => this.orders.delete(name));
      this.orders.set(name, order);
    }
    return order;
  }

  /** `want`, waiting at most `ms`: the context when it came in time. */
  async within(name: string, ms: number): Promise<SecureContext | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    await Promise.race([this.want(name).catch(() => {}), late]);
    clearTimeout(timer);
    return this.contextFor(name);
  }

  /** The key authorization of a pending http-01 challenge. */
  httpChallenge(token: string): Promise<string | undefined> {
    return this.options.repository.challenge(challengeKey('http-01', token), Date.now());
  }

  /** The RFC 8737 certificate for a pending tls-alpn-01 challenge of `name`. */
  async alpnChallenge(name: string): Promise<SecureContext | undefined> {
    const keyAuthorization = await this.options.repository.challenge(challengeKey('tls-alpn-01', name), Date.now());
    if (keyAuthorization === undefined) return undefined;
    this.alpnKey ??= newAccountKey();
    const { cert, key } = await alpnChallengeCertificate(name, keyAuthorization, await this.alpnKey);
    return createSecureContext({ cert, key });
  }

  /** Loads what is stored, then sweeps every ACME_RENEW_INTERVAL (a minute by default). */
  async start(): Promise<void> {
    await this.sweepCoalesced();
    this.timer = setInterval(() => void this.sweepCoalesced(), this.options.config.renewIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /**
   * A reservation or TLS edge changed (through this instance's API): its names are ordered now
   * rather than at the next sweep. Calls during a sweep share one more sweep after it.
   */
  namesChanged(): Promise<void> {
    return this.sweepCoalesced();
  }

  /** Serves what the database holds, and orders what is due for the names still served. */
  async sweep(): Promise<void> {
    let rows: AcmeCertificateRow[];
    let managed: Map<string, ManagedName>;
    try {
      rows = await this.options.repository.certificates();
      managed = this.ordered(await this.options.repository.managedNames());
    } catch (err) {
      this.options.logger.warn({ err }, 'ACME: cannot read the stored certificates; the next sweep tries again');
      return;
    }
    this.managed = managed;
    const wanted = new Set(managed.keys());
    const now = Date.now();
    for (const row of rows) {
      const installed = this.install(row);
      const policyKey = managed.get(row.name)?.keyType;
      const keyChanged = installed && policyKey !== undefined && this.served.get(row.name)?.keyType !== policyKey;
      // renewals stop for names no longer served nor managed (an endpoint gone, an edge or reservation deleted)
      if ((row.orderAt <= now || keyChanged) && (this.options.serves(row.name) || managed.has(row.name))) void this.want(row.name).catch(() => {});
      wanted.delete(row.name);
    }
    for (const name of wanted) void this.want(name).catch(() => {});
  }

  /** The managed names that are ordered: not those the edge certificate covers, nor wildcards without a DNS hook (said once in the log). */
  private ordered(names: readonly ManagedName[]): Map<string, ManagedName> {
    const ordered = new Map<string, ManagedName>();
    for (const each of names) {
      if (this.options.covered(each.name)) continue;
      if (each.name.startsWith('*.') && this.options.config.dnsHook === undefined) {
        if (!this.warnedWildcards.has(each.name)) {
          this.warnedWildcards.add(each.name);
          this.options.logger.warn({ event: 'acme_order_skipped', name: each.name, reason: 'dns_hook_missing' }, 'ACME: a reserved wildcard domain needs dns-01 (ACME_DNS_HOOK), which is not set: it is not ordered, the names under it are ordered one by one when served');
        }
        continue;
      }
      ordered.set(each.name, each);
    }
    for (const name of this.options.always) ordered.set(name, { name });
    return ordered;
  }

  /** A one-label ACME wildcard covering `name` is ordered (managed) or served: no certificate of its own. */
  private underOrderedWildcard(name: string): boolean {
    const dot = name.indexOf('.');
    if (name.startsWith('*.') || dot <= 0) return false;
    const wildcard = `*${name.slice(dot)}`;
    return this.managed.has(wildcard) || (this.served.get(wildcard)?.notAfter ?? 0) > Date.now();
  }

  private install(row: AcmeCertificateRow): boolean {
    if (row.certPem === null || row.keySealed === null || row.notAfter === null) return false;
    if (this.served.get(row.name)?.notAfter === row.notAfter) return true;
    try {
      const key = unseal(this.key, row.keySealed, `certificate:${row.name}`);
      this.serve(row.name, row.certPem, key, row.notAfter);
      return true;
    } catch (err) {
      this.options.logger.error({ err, name: row.name }, 'ACME: a stored certificate cannot be used (another sealing.key?); it is ordered again');
      return false;
    }
  }

  private serve(name: string, certPem: string, keyPem: string, notAfter: number): void {
    const keyType = new X509Certificate(certPem).publicKey.asymmetricKeyType === 'rsa' ? 'rsa' : 'ecdsa';
    this.served.set(name, { context: createSecureContext({ cert: certPem, key: keyPem }), certPem, notAfter, keyType });
  }

  private async orderIfDue(name: string): Promise<void> {
    const { repository, owner } = this.options;
    const stored = await repository.certificate(name);
    const now = Date.now();
    // a failed order waiting for its retry: nothing to do now (ClientHellos meanwhile cost one read)
    if (stored && stored.orderAt > now && stored.failures > 0) return;
    // a reserved domain's policy chooses the key; a certificate with the other kind is replaced
    const policyKey = await repository.policyKeyType(name);
    const keyType = policyKey ?? 'ecdsa';
    const installed = stored !== undefined && this.install(stored);
    const keyChanged = installed && policyKey !== undefined && this.served.get(name)?.keyType !== policyKey;
    // a usable certificate not yet due, of the kind asked for: nothing to do now
    if (stored && stored.orderAt > now && installed && !keyChanged) return;
    if (!(await repository.claimOrder(name, owner, now, now + ORDER_LEASE_MS))) return this.awaitOtherOrder(name, stored);
    const renewal = stored?.certPem != null;
    const started = Date.now();
    try {
      const issued = await orderCertificate({ config: this.options.config, client: await this.acmeClient(), repository, challenges: this.options.challenges }, name, keyType);
      const orderAt = renewalTime(issued.notBefore, issued.notAfter, this.options.config.renewBeforeMs);
      const keySealed = seal(this.key, issued.keyPem, `certificate:${name}`);
      await repository.finishOrder(name, owner, { ok: true, certPem: issued.certPem, keySealed, notAfter: issued.notAfter, orderAt });
      this.serve(name, issued.certPem, issued.keyPem, issued.notAfter);
      this.options.observeOrder?.('issued');
      const issuer = new X509Certificate(issued.certPem).issuer.replace(/\n/g, ', ');
      this.options.logger.info(
        { event: 'acme_order', name, result: 'issued', renewal, key_type: keyType, issuer, not_after: new Date(issued.notAfter).toISOString(), renews_at: new Date(orderAt).toISOString(), ms: Date.now() - started },
        'ACME certificate issued',
      );
    } catch (err) {
      const failures = (stored?.failures ?? 0) + 1;
      const orderAt = retryTime(Date.now(), failures);
      this.client = undefined; // a broken account or directory is looked up afresh next time
      await repository.finishOrder(name, owner, { ok: false, error: String((err as Error).message ?? err), failures, orderAt }).catch(() => {});
      this.options.observeOrder?.('failed');
      this.options.logger.warn({ event: 'acme_order', name, result: 'failed', renewal, key_type: keyType, failures, retry_at: new Date(orderAt).toISOString(), err }, 'ACME order failed; the current certificate stays');
    }
  }

  /**
   * Another instance orders `name` now: its outcome is read from the row (a new certificate is
   * served from here too), until the order's lease would have run out.
   */
  private async awaitOtherOrder(name: string, before: AcmeCertificateRow | undefined): Promise<void> {
    for (const deadline = Date.now() + ORDER_LEASE_MS; Date.now() < deadline && !this.stopped; ) {
      await new Promise((resolve) => setTimeout(resolve, CLAIMED_POLL_MS).unref());
      const row = await this.options.repository.certificate(name);
      if (!row) return;
      if (row.certPem !== null && row.notAfter !== before?.notAfter) return void this.install(row);
      if (row.failures > (before?.failures ?? 0)) return;
    }
  }

  private acmeClient(): Promise<acme.Client> {
    this.client ??= (async () => {
      const { repository, config } = this.options;
      const context = `account:${config.directoryUrl}`;
      let account = await repository.account(config.directoryUrl);
      if (!account) account = await repository.saveAccount({ directoryUrl: config.directoryUrl, keySealed: seal(this.key, await newAccountKey(), context), accountUrl: null });
      return acmeClient(config, unseal(this.key, account.keySealed, context));
    })();
    const client = this.client;
    client.catch(() => {
      if (this.client === client) this.client = undefined;
    });
    return client;
  }
}
