import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { AcmeConfig } from '../../../src/config.js';
import type { AcmeCertificateRow, AcmeRepository, ManagedName } from '../../../src/domain/acme/types.js';
import { createLogger } from '../../../src/observability/logger.js';
import { AcmeCertificates } from '../../../src/tunnels/tls/acme/acme-certificates.js';

/**
 * Which names the ACME sweep orders or renews (CERTIFICATES.md §1), against a repository that
 * records the claims: an order starts with a claim, so a name never claimed was never ordered.
 * Every claim is refused (another instance "holds" it), so no CA is needed.
 */

const config: AcmeConfig = { directoryUrl: 'https://ca.invalid/dir', email: undefined, eab: undefined, renewBeforeMs: undefined, renewIntervalMs: 60_000, dnsHook: undefined, challenges: ['tls-alpn-01'] };

/** A name's row whose renewal is due (its certificate's content plays no part here). */
const due = (name: string): AcmeCertificateRow => ({ name, certPem: null, keySealed: null, notAfter: null, orderAt: Date.now() - 1_000, failures: 0, lastError: null });

function fixture(options: { rows?: AcmeCertificateRow[]; managed?: ManagedName[]; served?: string[]; dnsHook?: string }) {
  const claimed: string[] = [];
  const state = { rows: options.rows ?? [], managed: options.managed ?? [] };
  const repository: Partial<AcmeRepository> = {
    certificates: async () => state.rows,
    managedNames: async () => state.managed,
    // the poll after a refused claim finds no row and gives up
    certificate: async () => undefined,
    policyKeyType: async () => undefined,
    claimOrder: async (name) => (claimed.push(name), false),
  };
  const lines: Record<string, unknown>[] = [];
  const served = new Set(options.served ?? []);
  const acme = new AcmeCertificates({
    config: { ...config, dnsHook: options.dnsHook },
    repository: repository as AcmeRepository,
    secret: randomBytes(32),
    owner: 'inst_test',
    challenges: ['tls-alpn-01'],
    serves: (name) => served.has(name),
    covered: (name) => name.endsWith('.burrow.localhost'),
    always: [],
    logger: createLogger('info', { write: (text: string) => void lines.push(JSON.parse(text) as Record<string, unknown>) }),
  });
  /**
   * One sweep, then what it claimed, once the orders it started are settled (a refused claim
   * looks at the row again a second later, then gives up): a next sweep can claim them again.
   */
  const sweep = async () => {
    claimed.length = 0;
    await acme.sweep();
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    return [...claimed].sort();
  };
  return { acme, state, served, lines, claimed, sweep };
}

describe('the ACME sweep', () => {
  it('renews a due certificate only while an endpoint here serves its name: the endpoint gone, renewals stop', async () => {
    const { acme, served, sweep } = fixture({ rows: [due('app.example.com')], served: ['app.example.com'] });
    assert.deepEqual(await sweep(), ['app.example.com']);
    served.delete('app.example.com');
    assert.deepEqual(await sweep(), []);
    acme.stop();
  });

  it("renews a TLS edge hostport's or a reservation's name while the database names it, not after it is deleted", async () => {
    const { acme, state, sweep } = fixture({ rows: [due('edge.example.com'), due('reserved.example.com')], managed: [{ name: 'edge.example.com' }, { name: 'reserved.example.com', keyType: 'rsa' }] });
    assert.deepEqual(await sweep(), ['edge.example.com', 'reserved.example.com']);
    state.managed = [{ name: 'reserved.example.com', keyType: 'rsa' }];
    assert.deepEqual(await sweep(), ['reserved.example.com']);
    state.managed = [];
    assert.deepEqual(await sweep(), []);
    acme.stop();
  });

  it('orders a managed name with no row yet, but never one the edge certificate covers', async () => {
    const { acme, sweep } = fixture({ managed: [{ name: 'new.example.com' }, { name: 'app.burrow.localhost' }] });
    assert.deepEqual(await sweep(), ['new.example.com']);
    acme.stop();
  });

  it('does not order a reserved wildcard without a DNS hook, and says so once', async () => {
    const { acme, lines, claimed, sweep } = fixture({ managed: [{ name: '*.wild.example.com', keyType: 'rsa' }] });
    assert.deepEqual(await sweep(), []);
    assert.deepEqual(await sweep(), []);
    const skipped = lines.filter((line) => line.event === 'acme_order_skipped');
    assert.deepEqual(skipped.map((line) => [line.name, line.reason, line.level]), [['*.wild.example.com', 'dns_hook_missing', 40]]);
    // without the wildcard's certificate, a name under it that an endpoint serves gets its own
    void acme.want('app.wild.example.com');
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    assert.deepEqual(claimed, ['app.wild.example.com']);
    acme.stop();
  });

  it('orders a reserved wildcard with a DNS hook, and no name under it on its own', async () => {
    const { acme, sweep, state } = fixture({ managed: [{ name: '*.wild.example.com', keyType: 'ecdsa' }], dnsHook: '/bin/true' });
    assert.deepEqual(await sweep(), ['*.wild.example.com']);
    state.rows = [due('app.wild.example.com')];
    state.managed = [{ name: '*.wild.example.com', keyType: 'ecdsa' }, { name: 'app.wild.example.com' }];
    assert.deepEqual(await sweep(), ['*.wild.example.com'], 'app.wild.example.com is covered by the ordered wildcard');
    acme.stop();
  });
});
