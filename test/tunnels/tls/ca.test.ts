// @test-pass sqlite
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmod, readFile, readdir, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { certificateNames, issueCertificate, issuedBy } from '../../../src/tunnels/tls/certificates.js';
import { TlsConfigError } from '../../../src/tunnels/tls/errors.js';
import { x509 } from '../../../src/tunnels/tls/x509.js';
import { handshake, ipv6Loopback, tempDir } from './helpers.js';

const mode = async (path: string) => (await stat(path)).mode & 0o777;

describe('loadOrCreateCa', () => {
  it('creates the CA on the first call (dir 0700, key 0600, cert 0644) and reuses it afterwards', async (t) => {
    const dir = join(await tempDir(t), 'data', 'tls');
    const first = await loadOrCreateCa(dir);
    assert.equal(first.created, true);
    assert.equal(first.caPath, join(dir, 'ca.pem'));
    assert.equal(await mode(dir), 0o700);
    assert.equal(await mode(join(dir, 'ca-key.pem')), 0o600);
    assert.equal(await mode(join(dir, 'ca.pem')), 0o644);
    assert.deepEqual((await readdir(dir)).sort(), ['ca-key.pem', 'ca.pem'], 'no temporary file left behind');

    const second = await loadOrCreateCa(dir);
    assert.equal(second.created, false);
    assert.equal(second.certPem, first.certPem);
    assert.equal(second.keyPem, first.keyPem);
    assert.equal(await readFile(join(dir, 'ca.pem'), 'utf8'), first.certPem);
  });

  it('makes an ECDSA P-256 CA: CA:TRUE critical, keyCertSign+cRLSign, SKI, ~10 years, CN "burrow local CA …"', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const cert = new x509.X509Certificate(ca.certPem);
    const bc = cert.getExtension(x509.BasicConstraintsExtension);
    assert.ok(bc?.ca && bc.critical);
    const ku = cert.getExtension(x509.KeyUsagesExtension);
    assert.equal(ku?.usages, x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    assert.ok(ku?.critical);
    assert.ok(cert.getExtension(x509.SubjectKeyIdentifierExtension));
    assert.match(cert.subject, /^CN=burrow local CA [0-9a-f]{8}$/);
    const years = (cert.notAfter.getTime() - cert.notBefore.getTime()) / (365.25 * 86_400_000);
    assert.ok(years > 9.9 && years < 10.1, String(years));
    const node = new X509Certificate(ca.certPem);
    assert.equal(node.publicKey.asymmetricKeyType, 'ec');
    assert.equal(node.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.ok(node.verify(node.publicKey), 'self-signed');
  });

  it('refuses a corrupt ca.pem or ca-key.pem, naming the file, and leaves it untouched', async (t) => {
    const dir = await tempDir(t);
    await loadOrCreateCa(dir);
    const caPath = join(dir, 'ca.pem');
    await writeFile(caPath, 'garbage');
    await assert.rejects(loadOrCreateCa(dir), (err: Error) => err instanceof TlsConfigError && err.message.includes(caPath) && !err.message.includes('\n'));
    assert.equal(await readFile(caPath, 'utf8'), 'garbage');

    const dir2 = await tempDir(t);
    await loadOrCreateCa(dir2);
    const keyPath = join(dir2, 'ca-key.pem');
    await writeFile(keyPath, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
    await assert.rejects(loadOrCreateCa(dir2), (err: Error) => err instanceof TlsConfigError && err.message.includes(keyPath));
  });

  it('refuses a certificate and key that do not belong together', async (t) => {
    const a = await tempDir(t);
    const b = await tempDir(t);
    await loadOrCreateCa(a);
    const other = await loadOrCreateCa(b);
    await writeFile(join(a, 'ca-key.pem'), other.keyPem);
    await assert.rejects(loadOrCreateCa(a), /do not belong together/);
  });

  it('refuses ca.pem without ca-key.pem rather than replacing it', async (t) => {
    const dir = await tempDir(t);
    const ca = await loadOrCreateCa(dir);
    await unlink(join(dir, 'ca-key.pem'));
    await assert.rejects(loadOrCreateCa(dir), (err: Error) => err.message.includes(join(dir, 'ca-key.pem')));
    assert.equal(await readFile(join(dir, 'ca.pem'), 'utf8'), ca.certPem);
  });

  it('gives a key without its certificate (an interrupted first start) a certificate', async (t) => {
    const dir = await tempDir(t);
    const ca = await loadOrCreateCa(dir);
    await unlink(join(dir, 'ca.pem'));
    const again = await loadOrCreateCa(dir);
    assert.equal(again.keyPem, ca.keyPem);
    assert.ok(new X509Certificate(again.certPem).checkPrivateKey((await import('node:crypto')).createPrivateKey(again.keyPem)));
  });

  it('names an unreadable file', { skip: process.getuid?.() === 0 ? 'root reads everything' : false }, async (t) => {
    const dir = await tempDir(t);
    await loadOrCreateCa(dir);
    await chmod(join(dir, 'ca-key.pem'), 0);
    await assert.rejects(loadOrCreateCa(dir), (err: Error) => err.message.includes('ca-key.pem') && /EACCES/.test(err.message));
  });

  it('concurrent first starts in one process agree on one CA', async (t) => {
    const dir = await tempDir(t);
    const all = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateCa(dir)));
    assert.equal(new Set(all.map((ca) => ca.certPem)).size, 1);
    assert.equal(new Set(all.map((ca) => ca.keyPem)).size, 1);
    assert.equal(all.filter((ca) => ca.created).length, 1);
    assert.deepEqual((await readdir(dir)).sort(), ['ca-key.pem', 'ca.pem']);
  });

  it('concurrent first starts in separate processes agree on one CA', async (t) => {
    const dir = await tempDir(t);
    const module = new URL('../../../src/tunnels/tls/ca.ts', import.meta.url).href;
    const script = `const { loadOrCreateCa } = await import(${JSON.stringify(module)});
      const ca = await loadOrCreateCa(${JSON.stringify(dir)});
      process.stdout.write(JSON.stringify({ cert: ca.certPem, key: ca.keyPem, created: ca.created }));`;
    const run = promisify(execFile);
    const outputs = await Promise.all(
      Array.from({ length: 3 }, () => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script])),
    );
    const results = outputs.map((o) => JSON.parse(o.stdout) as { cert: string; key: string; created: boolean });
    const onDisk = await loadOrCreateCa(dir);
    for (const r of results) {
      assert.equal(r.cert, onDisk.certPem);
      assert.equal(r.key, onDisk.keyPem);
    }
    assert.equal(results.filter((r) => r.created).length, 1);
  });
});

describe('issueCertificate', () => {
  it('issues an ECDSA P-256 server leaf with the profile agents and browsers want', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const leaf = await issueCertificate(ca, { dnsNames: ['localhost', 'Foo.Example'], ipAddresses: ['127.0.0.1', '0:0::1'], days: 30 });
    const cert = new x509.X509Certificate(leaf.certPem);
    const bc = cert.getExtension(x509.BasicConstraintsExtension);
    assert.equal(bc?.ca, false);
    assert.equal(cert.getExtension(x509.KeyUsagesExtension)?.usages, x509.KeyUsageFlags.digitalSignature);
    assert.deepEqual([...(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])], [x509.ExtendedKeyUsage.serverAuth]);
    const caSki = new x509.X509Certificate(ca.certPem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
    assert.equal(cert.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId, caSki);
    assert.ok(cert.getExtension(x509.SubjectKeyIdentifierExtension));
    assert.deepEqual(certificateNames(leaf.certPem), { dnsNames: ['foo.example', 'localhost'], ipAddresses: ['127.0.0.1', '::1'] });
    assert.equal(cert.subject, 'CN=localhost');
    assert.equal(cert.serialNumber.length, 32, 'a 16-byte serial');
    assert.ok(parseInt(cert.serialNumber.slice(0, 2), 16) < 0x80, 'positive');
    const skew = Date.now() - cert.notBefore.getTime();
    assert.ok(skew > 50_000 && skew < 70_000, `notBefore a minute ago, not ${skew} ms`);
    assert.ok(Math.abs(cert.notAfter.getTime() - (Date.now() + 30 * 86_400_000)) < 120_000);
    assert.ok(issuedBy(leaf.certPem, ca));
    const node = new X509Certificate(leaf.certPem);
    assert.equal(node.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.notEqual((await issueCertificate(ca, { dnsNames: ['localhost'] })).certPem, leaf.certPem);
  });

  it('refuses invalid names and an empty name list', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    await assert.rejects(issueCertificate(ca, { dnsNames: [] }), /at least one/);
    await assert.rejects(issueCertificate(ca, { dnsNames: ['bad name'] }), /not a valid DNS name/);
    await assert.rejects(issueCertificate(ca, { dnsNames: ['a..b'] }), /not a valid DNS name/);
    await assert.rejects(issueCertificate(ca, { ipAddresses: ['300.1.1.1'] }), /not a valid IP/);
  });

  it('uses an empty subject and a critical SAN when no name fits a CN', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const long = `${'a'.repeat(60)}.example.com`;
    const cert = new x509.X509Certificate((await issueCertificate(ca, { dnsNames: [long] })).certPem);
    assert.equal(cert.subject, '');
    assert.equal(cert.getExtension(x509.SubjectAlternativeNameExtension)?.critical, true);
  });

  describe('a real TLS handshake', () => {
    it('verifies for servername localhost, for IP 127.0.0.1, and fails without the CA', async (t) => {
      const ca = await loadOrCreateCa(await tempDir(t));
      const leaf = await issueCertificate(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
      const server = { cert: leaf.certPem, key: leaf.keyPem };
      assert.deepEqual(await handshake(server, '127.0.0.1', { servername: 'localhost', ca: ca.certPem }), { ok: true, echoed: 'ping' });
      assert.deepEqual(await handshake(server, '127.0.0.1', { ca: ca.certPem }), { ok: true, echoed: 'ping' });
      for (const v of ['TLSv1.2', 'TLSv1.3'] as const) {
        assert.equal((await handshake(server, '127.0.0.1', { servername: 'localhost', ca: ca.certPem, minVersion: v, maxVersion: v })).ok, true, v);
      }
      const untrusted = await handshake(server, '127.0.0.1', { servername: 'localhost' });
      assert.equal(untrusted.ok, false);
      assert.match(untrusted.ok ? '' : untrusted.code, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED/);
      const otherCa = await loadOrCreateCa(await tempDir(t));
      assert.equal((await handshake(server, '127.0.0.1', { servername: 'localhost', ca: otherCa.certPem })).ok, false);
      const wrongName = await handshake(server, '127.0.0.1', { servername: 'example.com', ca: ca.certPem });
      assert.equal(wrongName.ok ? '' : wrongName.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
    });

    it('verifies for IP ::1', async (t) => {
      if (!(await ipv6Loopback())) return t.skip('no IPv6 loopback here');
      const ca = await loadOrCreateCa(await tempDir(t));
      const leaf = await issueCertificate(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
      assert.deepEqual(await handshake({ cert: leaf.certPem, key: leaf.keyPem }, '::1', { ca: ca.certPem }), { ok: true, echoed: 'ping' });
      const v4only = await issueCertificate(ca, { ipAddresses: ['127.0.0.1'] });
      assert.equal((await handshake({ cert: v4only.certPem, key: v4only.keyPem }, '::1', { ca: ca.certPem })).ok, false);
    });

    it('a wildcard leaf covers exactly one label', async (t) => {
      const ca = await loadOrCreateCa(await tempDir(t));
      const leaf = await issueCertificate(ca, { dnsNames: ['burrow.localhost', '*.burrow.localhost'] });
      const server = { cert: leaf.certPem, key: leaf.keyPem };
      assert.equal((await handshake(server, '127.0.0.1', { servername: 'abc.burrow.localhost', ca: ca.certPem })).ok, true);
      assert.equal((await handshake(server, '127.0.0.1', { servername: 'burrow.localhost', ca: ca.certPem })).ok, true);
      assert.equal((await handshake(server, '127.0.0.1', { servername: 'a.b.burrow.localhost', ca: ca.certPem })).ok, false);
    });
  });
});
