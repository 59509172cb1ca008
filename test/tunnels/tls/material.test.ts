import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { certificateNames, issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { TlsConfigError } from '../../../src/tunnels/tls/errors.js';
import { agentTlsMaterial, edgeTlsMaterial } from '../../../src/tunnels/tls/material.js';
import { onDemandCertificates } from '../../../src/tunnels/tls/on-demand.js';
import { handshake, tempDir } from './helpers.js';

const oneLine = (pattern: RegExp) => (err: unknown) => err instanceof TlsConfigError && pattern.test(err.message) && !err.message.includes('\n');

describe('agentTlsMaterial', () => {
  it('issues a leaf for localhost, 127.0.0.1 and ::1 from a new CA, stores it (key 0600) and reuses it', async (t) => {
    const tlsDir = join(await tempDir(t), 'tls');
    const first = await agentTlsMaterial({ tlsDir });
    assert.equal(first.source, 'ca');
    assert.equal(first.createdCa, true);
    assert.equal(first.issued, true);
    assert.equal(first.caPath, join(tlsDir, 'ca.pem'));
    assert.deepEqual(certificateNames(first.cert), { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
    assert.equal((await stat(join(tlsDir, 'agent-key.pem'))).mode & 0o777, 0o600);
    assert.equal(await readFile(join(tlsDir, 'agent.pem'), 'utf8'), first.cert);

    const second = await agentTlsMaterial({ tlsDir });
    assert.equal(second.createdCa, false);
    assert.equal(second.issued, false);
    assert.equal(second.cert, first.cert);
    assert.equal(second.key, first.key);

    const ca = await readFile(first.caPath!, 'utf8');
    assert.equal((await handshake(second, '127.0.0.1', { servername: 'localhost', ca })).ok, true);
    assert.equal((await handshake(second, '127.0.0.1', { ca })).ok, true);
  });

  it('reissues when AGENT_HOSTNAME changes (DNS name or IP), and reuses for the same one', async (t) => {
    const tlsDir = await tempDir(t);
    const plain = await agentTlsMaterial({ tlsDir });
    const named = await agentTlsMaterial({ tlsDir, extraHostname: 'Tunnel.Example.com' });
    assert.equal(named.issued, true);
    assert.notEqual(named.cert, plain.cert);
    assert.deepEqual(certificateNames(named.cert).dnsNames, ['localhost', 'tunnel.example.com']);
    assert.equal((await agentTlsMaterial({ tlsDir, extraHostname: 'tunnel.example.com' })).issued, false);
    const ip = await agentTlsMaterial({ tlsDir, extraHostname: '10.1.2.3' });
    assert.equal(ip.issued, true);
    assert.deepEqual(certificateNames(ip.cert), { dnsNames: ['localhost'], ipAddresses: ['10.1.2.3', '127.0.0.1', '::1'] });
    await assert.rejects(agentTlsMaterial({ tlsDir, extraHostname: 'not a host' }), oneLine(/AGENT_HOSTNAME/));
  });

  it('reissues a stored leaf that is near expiry, corrupt, mismatched or from another CA', async (t) => {
    const tlsDir = await tempDir(t);
    const first = await agentTlsMaterial({ tlsDir });
    const ca = await loadOrCreateCa(tlsDir);
    const short = await issueCertificate(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'], days: 20 });
    await writeFile(join(tlsDir, 'agent.pem'), short.certPem);
    await writeFile(join(tlsDir, 'agent-key.pem'), short.keyPem);
    const renewed = await agentTlsMaterial({ tlsDir });
    assert.equal(renewed.issued, true, 'less than 30 days left');

    await writeFile(join(tlsDir, 'agent-key.pem'), first.key);
    assert.equal((await agentTlsMaterial({ tlsDir })).issued, true, 'key of another certificate');

    await writeFile(join(tlsDir, 'agent.pem'), 'garbage');
    assert.equal((await agentTlsMaterial({ tlsDir })).issued, true, 'corrupt certificate');

    const foreign = await loadOrCreateCa(await tempDir(t));
    const other = await issueCertificate(foreign, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
    await writeFile(join(tlsDir, 'agent.pem'), other.certPem);
    await writeFile(join(tlsDir, 'agent-key.pem'), other.keyPem);
    assert.equal((await agentTlsMaterial({ tlsDir })).issued, true, 'issued by another CA');
    assert.equal((await agentTlsMaterial({ tlsDir })).issued, false);
  });

  describe('AGENT_TLS_CERT / AGENT_TLS_KEY', () => {
    async function operatorPair(t: { after(fn: () => Promise<void>): void }) {
      const dir = await tempDir(t);
      const ca = await loadOrCreateCa(join(dir, 'other-ca'));
      const leaf = await issueCertificate(ca, { dnsNames: ['tunnel.example.com'] });
      const certFile = join(dir, 'cert.pem');
      const keyFile = join(dir, 'key.pem');
      await writeFile(certFile, leaf.certPem + ca.certPem); // a chain
      await writeFile(keyFile, leaf.keyPem);
      return { dir, certFile, keyFile, leaf, ca };
    }

    it('uses good files as they are and does not create a CA', async (t) => {
      const { dir, certFile, keyFile, leaf } = await operatorPair(t);
      const tlsDir = join(dir, 'tls');
      const m = await agentTlsMaterial({ tlsDir, certFile, keyFile });
      assert.equal(m.source, 'files');
      assert.equal(m.caPath, undefined);
      assert.equal(m.createdCa, false);
      assert.ok(m.cert.startsWith(leaf.certPem));
      assert.equal(m.key, leaf.keyPem);
      assert.deepEqual(m.warnings, []);
      await assert.rejects(stat(tlsDir), /ENOENT/);
    });

    it('needs both or neither', async (t) => {
      const { certFile, keyFile, dir } = await operatorPair(t);
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, certFile }), oneLine(/AGENT_TLS_CERT is set but AGENT_TLS_KEY is not/));
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, keyFile }), oneLine(/AGENT_TLS_KEY is set but AGENT_TLS_CERT is not/));
    });

    it('names the variable and the file that is missing, not PEM, or does not match', async (t) => {
      const { certFile, keyFile, dir } = await operatorPair(t);
      const missing = join(dir, 'nope.pem');
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, certFile: missing, keyFile }), oneLine(new RegExp(`^AGENT_TLS_CERT: cannot read ${missing}: ENOENT`)));
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, certFile, keyFile: missing }), oneLine(/^AGENT_TLS_KEY: cannot read .*ENOENT/));
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, certFile: keyFile, keyFile }), oneLine(/^AGENT_TLS_CERT: .* contains no PEM certificate/));
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, certFile, keyFile: certFile }), oneLine(/^AGENT_TLS_KEY: .* contains no PEM private key/));
      const otherKey = join(dir, 'other-key.pem');
      await writeFile(otherKey, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
      await assert.rejects(
        agentTlsMaterial({ tlsDir: dir, certFile, keyFile: otherKey }),
        oneLine(new RegExp(`^AGENT_TLS_KEY: ${otherKey} does not match the certificate in AGENT_TLS_CERT \\(${certFile}\\)`)),
      );
      const encrypted = join(dir, 'enc-key.pem');
      await writeFile(
        encrypted,
        generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'x' }),
      );
      await assert.rejects(agentTlsMaterial({ tlsDir: dir, certFile, keyFile: encrypted }), oneLine(/^AGENT_TLS_KEY: .* encrypted/));
    });

    it('warns about a CA certificate used as the server certificate', async (t) => {
      const { ca } = await operatorPair(t);
      const m = await agentTlsMaterial({ tlsDir: 'unused', certFile: ca.caPath, keyFile: ca.keyPath });
      assert.ok(m.warnings.some((w) => /CA certificate/.test(w)), m.warnings.join('; '));
    });
  });
});

describe('edgeTlsMaterial', () => {
  it('issues EDGE_DOMAIN and *.EDGE_DOMAIN into edge.pem, beside the agent leaf, and reuses it', async (t) => {
    const tlsDir = await tempDir(t);
    const agent = await agentTlsMaterial({ tlsDir });
    const edge = await edgeTlsMaterial({ tlsDir, edgeDomain: 'Burrow.Localhost' });
    assert.equal(edge.createdCa, false);
    assert.equal(edge.caPath, agent.caPath);
    assert.deepEqual(certificateNames(edge.cert), { dnsNames: ['*.burrow.localhost', 'burrow.localhost'], ipAddresses: [] });
    assert.equal(await readFile(join(tlsDir, 'edge.pem'), 'utf8'), edge.cert);
    assert.equal((await stat(join(tlsDir, 'edge-key.pem'))).mode & 0o777, 0o600);
    assert.equal((await edgeTlsMaterial({ tlsDir, edgeDomain: 'burrow.localhost' })).issued, false);
    assert.equal((await edgeTlsMaterial({ tlsDir, edgeDomain: 'tunnels.example.com' })).issued, true);
    const ca = await readFile(agent.caPath!, 'utf8');
    const again = await edgeTlsMaterial({ tlsDir, edgeDomain: 'tunnels.example.com' });
    assert.equal((await handshake(again, '127.0.0.1', { servername: 'abc.tunnels.example.com', ca })).ok, true);
    await assert.rejects(edgeTlsMaterial({ tlsDir, edgeDomain: '*.x.com' }), oneLine(/EDGE_DOMAIN/));
  });

  it('takes EDGE_TLS_CERT / EDGE_TLS_KEY, warning when they do not cover *.EDGE_DOMAIN', async (t) => {
    const dir = await tempDir(t);
    const ca = await loadOrCreateCa(join(dir, 'ca'));
    const wildcard = await issueCertificate(ca, { dnsNames: ['*.tunnels.example.com'] });
    const single = await issueCertificate(ca, { dnsNames: ['www.example.com'] });
    const files = async (leaf: { certPem: string; keyPem: string }, name: string) => {
      await writeFile(join(dir, `${name}.pem`), leaf.certPem);
      await writeFile(join(dir, `${name}-key.pem`), leaf.keyPem);
      return { certFile: join(dir, `${name}.pem`), keyFile: join(dir, `${name}-key.pem`) };
    };
    const good = await edgeTlsMaterial({ tlsDir: dir, edgeDomain: 'tunnels.example.com', ...(await files(wildcard, 'w')) });
    assert.equal(good.source, 'files');
    assert.deepEqual(good.warnings, []);
    const narrow = await edgeTlsMaterial({ tlsDir: dir, edgeDomain: 'tunnels.example.com', ...(await files(single, 's')) });
    assert.ok(narrow.warnings.some((w) => w.includes('does not cover *.tunnels.example.com')), narrow.warnings.join('; '));
  });

  it('names EDGE_TLS_CERT / EDGE_TLS_KEY in its errors', async (t) => {
    const dir = await tempDir(t);
    await assert.rejects(edgeTlsMaterial({ tlsDir: dir, edgeDomain: 'x.com', certFile: join(dir, 'c.pem') }), oneLine(/EDGE_TLS_CERT is set but EDGE_TLS_KEY is not/));
    await assert.rejects(
      edgeTlsMaterial({ tlsDir: dir, edgeDomain: 'x.com', certFile: join(dir, 'c.pem'), keyFile: join(dir, 'k.pem') }),
      oneLine(/^EDGE_TLS_CERT: cannot read/),
    );
  });
});

describe('onDemandCertificates', () => {
  it('issues a context per name on first use, shares concurrent requests, and keeps a bounded LRU', async (t) => {
    const tlsDir = await tempDir(t);
    const ca = await loadOrCreateCa(tlsDir);
    const certs = onDemandCertificates(ca, { maxEntries: 2 });
    const [a1, a2] = await Promise.all([certs.secureContext('App.Example.com'), certs.secureContext('app.example.com')]);
    assert.equal(a1, a2);
    assert.equal(await certs.secureContext('app.example.com'), a1);
    const b = await certs.secureContext('b.example.com');
    assert.equal(await certs.secureContext('app.example.com'), a1, 'a hit makes it the most recent');
    await certs.secureContext('c.example.com'); // evicts b
    assert.equal(certs.size, 2);
    assert.equal(await certs.secureContext('app.example.com'), a1);
    assert.notEqual(await certs.secureContext('b.example.com'), b);
    await assert.rejects(certs.secureContext('no such name!'), /not a host name/);

    // The context serves a real handshake.
    const { createServer, connect } = await import('node:tls');
    const server = createServer({ SNICallback: (name, cb) => void certs.secureContext(name).then((ctx) => cb(null, ctx), cb) }, (s) => s.end('hi'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const got = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, servername: 'deep.name.example.org', ca: ca.certPem }, () => {
        socket.once('data', (d) => resolve(d.toString()));
      });
      socket.on('error', reject);
    });
    assert.equal(got, 'hi');
  });
});
