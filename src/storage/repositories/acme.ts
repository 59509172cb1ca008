import { isIP } from 'node:net';
import type { AcmeAccountRow, AcmeCertificateRow, AcmeKeyType, AcmeRepository, ManagedName, OrderOutcome } from '../../domain/acme/types.js';
import { param } from '../prepared.js';
import type { AcmeCertificatesTable } from '../schema.js';
import type { Store } from '../types.js';

const CERTIFICATE_COLUMNS = ['name', 'cert_pem', 'key_sealed', 'not_after', 'order_at', 'failures', 'last_error'] as const;

type CertificateRow = Pick<AcmeCertificatesTable, (typeof CERTIFICATE_COLUMNS)[number]>;

/** ACME accounts, certificates and challenges (migration 012), in the style of accounts.ts. */
export class SqlAcmeRepository implements AcmeRepository {
  private readonly statements;

  constructor(private readonly store: Store) {
    const db = store.db;
    this.statements = {
      account: store.prepare(db.selectFrom('acme_accounts').select(['directory_url', 'key_sealed', 'account_url']).where('directory_url', '=', param('directory'))),
      insertAccount: store.prepare(
        db
          .insertInto('acme_accounts')
          .values({ directory_url: param('directory'), key_sealed: param('key'), account_url: param<string | null>('url') })
          .onConflict((c) => c.column('directory_url').doNothing()),
      ),
      managed: store.prepare(
        db.selectFrom('reserved_domains').select(['domain', 'certificate_policy']).where('certificate_policy', 'is not', null).orderBy('domain'),
      ),
      policyOf: store.prepare(db.selectFrom('reserved_domains').select('certificate_policy').where('domain', '=', param('name'))),
      edgeHostports: store.prepare(
        db.selectFrom('tls_edges').innerJoin('accounts', 'accounts.id', 'tls_edges.account_id').select('tls_edges.hostports').where('accounts.revoked_at', 'is', null),
      ),
      certificate: store.prepare(db.selectFrom('acme_certificates').select(CERTIFICATE_COLUMNS).where('name', '=', param('name'))),
      certificates: store.prepare(db.selectFrom('acme_certificates').select(CERTIFICATE_COLUMNS).orderBy('name')),
      insertName: store.prepare(
        db
          .insertInto('acme_certificates')
          .values({ name: param('name'), order_at: param<number>('now'), failures: 0, order_until: 0 })
          .onConflict((c) => c.column('name').doNothing()),
      ),
      // the claim is a lease: an instance that died while ordering loses it when it runs out
      claim: store.prepare(
        db
          .updateTable('acme_certificates')
          .set({ order_owner: param('owner'), order_until: param<number>('until') })
          .where('name', '=', param('name'))
          .where((eb) => eb.or([eb('order_until', '<', param<number>('now')), eb('order_owner', '=', param('owner'))])),
      ),
      succeeded: store.prepare(
        db
          .updateTable('acme_certificates')
          .set({
            cert_pem: param('cert'),
            key_sealed: param('key'),
            not_after: param<number>('notAfter'),
            order_at: param<number>('orderAt'),
            failures: 0,
            last_error: null,
            order_owner: null,
            order_until: 0,
          })
          .where('name', '=', param('name'))
          .where('order_owner', '=', param('owner')),
      ),
      failed: store.prepare(
        db
          .updateTable('acme_certificates')
          .set({ order_at: param<number>('orderAt'), failures: param<number>('failures'), last_error: param('error'), order_owner: null, order_until: 0 })
          .where('name', '=', param('name'))
          .where('order_owner', '=', param('owner')),
      ),
      putChallenge: store.prepare(
        db
          .insertInto('acme_challenges')
          .values({ key: param('key'), key_authorization: param('value'), expires_at: param<number>('expires') })
          .onConflict((c) => c.column('key').doUpdateSet({ key_authorization: param('value'), expires_at: param<number>('expires') })),
      ),
      challenge: store.prepare(
        db.selectFrom('acme_challenges').select('key_authorization').where('key', '=', param('key')).where('expires_at', '>', param<number>('now')),
      ),
      deleteChallenge: store.prepare(db.deleteFrom('acme_challenges').where('key', '=', param('key'))),
      pruneChallenges: store.prepare(db.deleteFrom('acme_challenges').where('expires_at', '<=', param<number>('now'))),
    };
  }

  async account(directoryUrl: string): Promise<AcmeAccountRow | undefined> {
    const row = await this.statements.account.first({ directory: directoryUrl });
    return row && { directoryUrl: row.directory_url, keySealed: row.key_sealed, accountUrl: row.account_url };
  }

  async saveAccount(account: AcmeAccountRow): Promise<AcmeAccountRow> {
    await this.statements.insertAccount.run({ directory: account.directoryUrl, key: account.keySealed, url: account.accountUrl });
    return (await this.account(account.directoryUrl)) ?? account;
  }

  async managedNames(): Promise<ManagedName[]> {
    const names = new Map<string, ManagedName>();
    for (const row of await this.statements.edgeHostports.all({})) {
      for (const hostport of JSON.parse(row.hostports) as string[]) {
        const host = hostport.slice(0, hostport.lastIndexOf(':')).toLowerCase();
        // a wildcard hostport would need dns-01 for any name under it: only reservations order wildcards
        if (host !== '' && !host.startsWith('*.') && isIP(host) === 0) names.set(host, { name: host });
      }
    }
    // a reservation's policy (its key type) wins over an edge naming the same host
    for (const row of await this.statements.managed.all({})) names.set(row.domain, { name: row.domain, keyType: keyTypeOf(row.certificate_policy) ?? 'rsa' });
    return [...names.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async policyKeyType(name: string): Promise<AcmeKeyType | undefined> {
    return keyTypeOf((await this.statements.policyOf.first({ name }))?.certificate_policy ?? null);
  }

  async certificate(name: string): Promise<AcmeCertificateRow | undefined> {
    const row = await this.statements.certificate.first({ name });
    return row && certificateOf(row);
  }

  async certificates(): Promise<AcmeCertificateRow[]> {
    return (await this.statements.certificates.all({})).map(certificateOf);
  }

  async certificatesNamed(names: readonly string[]): Promise<AcmeCertificateRow[]> {
    if (names.length === 0) return [];
    const rows = await this.store.db.selectFrom('acme_certificates').select(CERTIFICATE_COLUMNS).where('name', 'in', [...names]).execute();
    return rows.map(certificateOf);
  }

  async claimOrder(name: string, owner: string, nowMs: number, untilMs: number): Promise<boolean> {
    await this.statements.insertName.run({ name, now: nowMs });
    return (await this.statements.claim.run({ name, owner, now: nowMs, until: untilMs })) > 0;
  }

  async finishOrder(name: string, owner: string, outcome: OrderOutcome): Promise<void> {
    if (outcome.ok) {
      await this.statements.succeeded.run({ name, owner, cert: outcome.certPem, key: outcome.keySealed, notAfter: outcome.notAfter, orderAt: outcome.orderAt });
    } else {
      await this.statements.failed.run({ name, owner, error: outcome.error.slice(0, 1000), failures: outcome.failures, orderAt: outcome.orderAt });
    }
  }

  async putChallenge(key: string, keyAuthorization: string, expiresAt: number): Promise<void> {
    await this.statements.pruneChallenges.run({ now: Date.now() });
    await this.statements.putChallenge.run({ key, value: keyAuthorization, expires: expiresAt });
  }

  async challenge(key: string, nowMs: number): Promise<string | undefined> {
    return (await this.statements.challenge.first({ key, now: nowMs }))?.key_authorization;
  }

  async deleteChallenge(key: string): Promise<void> {
    await this.statements.deleteChallenge.run({ key });
  }
}

/** The `private_key_type` of a stored policy (storage/repositories/reserved-domains.ts writes it). */
function keyTypeOf(policy: string | null): AcmeKeyType | undefined {
  if (policy === null) return undefined;
  const keyType = (JSON.parse(policy) as { private_key_type?: string }).private_key_type;
  return keyType === 'ecdsa' ? 'ecdsa' : 'rsa';
}

function certificateOf(row: CertificateRow): AcmeCertificateRow {
  return {
    name: row.name,
    certPem: row.cert_pem,
    keySealed: row.key_sealed,
    notAfter: row.not_after === null ? null : Number(row.not_after),
    orderAt: Number(row.order_at),
    failures: Number(row.failures),
    lastError: row.last_error,
  };
}
