// @test-pass sqlite
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createLogger } from '../../../src/observability/logger.js';
import { EdgeCertificates } from '../../../src/tunnels/public/edge-certificates.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { CertificateDirectory, readCertificateDirectory, type DirectoryPair } from '../../../src/tunnels/tls/cert-directory.js';
import { issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { CertificateFileWatch } from '../../../src/tunnels/tls/file-watch.js';
import { describeCertificate } from '../../../src/tunnels/tls/inventory.js';
import { CertificateRenewal } from '../../../src/tunnels/tls/renewal.js';
import { listCertificates, type CertificateSummary } from '../../../src/domain/certificates/inventory.js';
import { tempDir } from './helpers.js';

function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { logger: createLogger('info', { write: (text: string) => void lines.push(JSON.parse(text) as Record<string, unknown>) }), lines };
}

async function writePair(directory: string, stem: string, pair: { certPem: string; keyPem: string }): Promise<void> {
  await writeFile(join(directory, `${stem}.key`), pair.keyPem);
  await writeFile(join(directory, `${stem}.crt`), pair.certPem);
}

const serial = (pem: string) => new X509Certificate(pem).serialNumber;

describe('certificate reloads', () => {
  it('refuses a new pair that has already expired, keeping the one served', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const expired = await issueCertificate(ca, { dnsNames: ['a.example.com'], days: 1 / 86_400 });
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const { logger, lines } = capturedLogger();
    let applied = 0;
    const edge = { name: 'edge', current: 'old', load: async () => ({ cert: expired.certPem, key: expired.keyPem, warnings: [], notAfter: expired.notAfter.getTime() }), apply: () => void applied++ };
    await new CertificateRenewal([edge], logger).check();
    assert.equal(applied, 0);
    assert.equal(edge.current, 'old');
    const failure = lines.find((line) => line.level === 50 && line.certificate === 'edge');
    assert.match((failure?.err as { message?: string } | undefined)?.message ?? '', /the new certificate expired on /);
  });

  it('runs one reload at a time: calls during one share a single run after it', async () => {
    let loads = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const edge = { name: 'edge', current: 'pem', load: async () => (loads++, await gate, { cert: 'pem', key: 'k', warnings: [] }), apply: () => {} };
    const renewal = new CertificateRenewal([edge], capturedLogger().logger);
    const runs = [renewal.check(), renewal.check(), renewal.check(), renewal.check()];
    release();
    await Promise.all(runs);
    assert.equal(loads, 2);
  });

  it('a directory pair: an exact name first, then a one-label wildcard, then the edge certificate', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const edge = await issueCertificate(ca, { dnsNames: ['edge.example'] });
    const exact = await issueCertificate(ca, { dnsNames: ['app.example.com'] });
    const wild = await issueCertificate(ca, { dnsNames: ['*.example.com'] });
    const certificates = new EdgeCertificates({ cert: edge.certPem, key: edge.keyPem, ca: undefined });
    const pair = (stem: string, issued: typeof edge, names: string[]): DirectoryPair => ({ stem, cert: issued.certPem, key: issued.keyPem, names, notAfter: issued.notAfter.getTime() });
    certificates.useDirectory([pair('exact', exact, ['app.example.com']), pair('wild', wild, ['*.example.com'])]);
    const contexts = {
      exact: await certificates.contextFor('app.example.com'),
      wild: await certificates.contextFor('other.example.com'),
      deep: await certificates.contextFor('a.b.example.com'),
      apex: await certificates.contextFor('example.com'),
      edge: await certificates.contextFor('edge.example'),
    };
    assert.notEqual(contexts.exact, contexts.wild);
    assert.equal(contexts.deep, contexts.edge, 'a wildcard covers one label only');
    assert.equal(contexts.apex, contexts.edge);
    assert.notEqual(contexts.wild, contexts.edge);
    certificates.useDirectory([]);
    assert.equal(await certificates.contextFor('app.example.com'), contexts.edge);
  });

  it('the directory: lone files and bad pairs are named, a reload keeps the previous version of a bad pair and drops a removed one', async (t) => {
    const dir = await tempDir(t);
    const ca = await loadOrCreateCa(await tempDir(t));
    const one = await issueCertificate(ca, { dnsNames: ['one.example.com'] });
    const two = await issueCertificate(ca, { dnsNames: ['two.example.com'] });
    await writePair(dir, 'one', one);
    await writePair(dir, 'two', two);
    await writeFile(join(dir, 'README.txt'), 'ignored');
    const { logger, lines } = capturedLogger();
    let served: readonly DirectoryPair[] = [];
    const directory = new CertificateDirectory(dir, logger, (pairs) => (served = pairs));
    await directory.load();
    assert.deepEqual(served.map((pair) => pair.stem).sort(), ['one', 'two']);

    await writeFile(join(dir, 'lone.crt'), one.certPem);
    await assert.rejects(new CertificateDirectory(dir, logger, () => {}).load(), /lone\.crt has no lone\.key beside it/);
    await rm(join(dir, 'lone.crt'));

    const renewed = await issueCertificate(ca, { dnsNames: ['one.example.com'] });
    await writeFile(join(dir, 'one.crt'), renewed.certPem); // its key is still the old one: a bad pair
    await rm(join(dir, 'two.crt'));
    await rm(join(dir, 'two.key'));
    await directory.reload();
    assert.deepEqual(served.map((pair) => [pair.stem, serial(pair.cert)]), [['one', serial(one.certPem)]]);
    assert.ok(lines.some((line) => line.level === 50 && line.stem === 'one' && /does not match/.test(String(line.problem))));

    await writeFile(join(dir, 'one.key'), renewed.keyPem);
    await directory.reload();
    assert.deepEqual(served.map((pair) => serial(pair.cert)), [serial(renewed.certPem)]);
    const entries = await readCertificateDirectory(dir);
    assert.deepEqual(entries.map((entry) => entry.stem), ['one']);
  });

  it('the file watch notices a file renamed over a watched one, once for a burst', async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, 'edge.crt'), 'a');
    let changes = 0;
    const watch = new CertificateFileWatch({ files: [join(dir, 'edge.crt')], directories: [], debounceMs: 500 }, () => void changes++);
    watch.start();
    t.after(() => watch.stop());
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = 0; i < 5; i++) {
      await writeFile(join(dir, '.tmp'), `b${i}`);
      await rename(join(dir, '.tmp'), join(dir, 'edge.crt'));
    }
    const deadline = Date.now() + 5_000;
    while (changes === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(changes, 1);
  });

  it('the stat poll notices a change when fs.watch says nothing', async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, 'edge.crt'), 'a');
    let changes = 0;
    const watch = new CertificateFileWatch({ files: [join(dir, 'edge.crt')], directories: [], debounceMs: 10, pollMs: 100, fsWatch: false }, () => void changes++);
    watch.start();
    t.after(() => watch.stop());
    await new Promise((resolve) => setTimeout(resolve, 150));
    await writeFile(join(dir, 'edge.crt'), 'a longer content');
    const deadline = Date.now() + 3_000;
    while (changes === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(changes, 1);
  });

  it('lists each certificate once, soonest expiry first, with a fingerprint id', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const long = await issueCertificate(ca, { dnsNames: ['long.example.com'], ipAddresses: ['10.0.0.1'], days: 90 });
    const short = await issueCertificate(ca, { dnsNames: ['short.example.com'], days: 10 });
    const a = describeCertificate(long.certPem, 'file');
    assert.match(a.id, /^[0-9a-f]{16}$/);
    assert.deepEqual(a.names, ['long.example.com', '10.0.0.1']);
    assert.match(a.issuer, /^burrow local CA [0-9a-f]{8}$/);
    const catalog = (summaries: CertificateSummary[]) => ({ list: async () => summaries });
    const listed = await listCertificates([catalog([a, describeCertificate(short.certPem, 'private_ca')]), catalog([a])]);
    assert.deepEqual(listed.map((summary) => summary.names[0]), ['short.example.com', 'long.example.com']);
  });
});
