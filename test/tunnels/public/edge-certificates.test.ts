import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSecureContext, type SecureContext } from 'node:tls';
import { EdgeCertificates, type AcmeIssued } from '../../../src/tunnels/public/edge-certificates.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { makeTempDir } from '../../helpers/server-process.js';

/** Which certificate a terminated HTTPS name gets, with ACME on (CERTIFICATES.md §1). */
describe('EdgeCertificates with ACME', async () => {
  const ca = await loadOrCreateCa(makeTempDir('edge-certs-'));
  const edge = await issueCertificate(ca, { dnsNames: ['edge.example', '*.edge.example'] });
  const acmeLeaf = await issueCertificate(ca, { dnsNames: ['app.example.com'] });
  const issuedContext = createSecureContext({ cert: acmeLeaf.certPem, key: acmeLeaf.keyPem });

  function fakeAcme(issued: Map<string, SecureContext>, waitMs: number): AcmeIssued & { asked: string[] } {
    const asked: string[] = [];
    return {
      asked,
      contextFor: (name) => issued.get(name),
      within: async (name, ms) => {
        asked.push(name);
        await new Promise((resolve) => setTimeout(resolve, Math.min(ms, waitMs)));
        return issued.get(name);
      },
    };
  }

  it('serves an issued ACME certificate, and the edge certificate for the names it covers', async () => {
    const acme = fakeAcme(new Map([['app.example.com', issuedContext]]), 0);
    const certificates = new EdgeCertificates({ cert: edge.certPem, key: edge.keyPem, ca }, acme);
    assert.equal(await certificates.contextFor('app.example.com', true), issuedContext);
    const covered = await certificates.contextFor('x.edge.example', true);
    assert.notEqual(covered, issuedContext);
    assert.deepEqual(acme.asked, [], 'a covered name is never ordered');
  });

  it("waits for a pending order only on an endpoint's own name, bounded, then falls back to the CA", async () => {
    const acme = fakeAcme(new Map(), 50);
    const certificates = new EdgeCertificates({ cert: edge.certPem, key: edge.keyPem, ca }, acme);
    const own = await certificates.contextFor('pending.example.com', true);
    assert.ok(own);
    assert.deepEqual(acme.asked, ['pending.example.com']);
    // a name a wildcard endpoint covers: no order, no wait
    await certificates.contextFor('random.wild.example.com', false);
    assert.deepEqual(acme.asked, ['pending.example.com']);
  });
});
