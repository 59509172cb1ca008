// @test-pass sqlite
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { describe, it } from 'node:test';
import { createLogger } from '../../../src/observability/logger.js';
import { AgentListener } from '../../../src/tunnels/agents/agent-listener.js';
import type { AgentSessions } from '../../../src/tunnels/agents/agent-sessions.js';
import { EdgeCertificates } from '../../../src/tunnels/public/edge-certificates.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { agentTlsMaterial } from '../../../src/tunnels/tls/material.js';
import { CertificateRenewal, type RenewableCertificate } from '../../../src/tunnels/tls/renewal.js';
import { tempDir } from './helpers.js';

const AGENT_NAMES = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] };

/** The certificate the listener serves a new connection, as the client sees it. */
function servedCertificate(port: number, ca: string): Promise<{ serial: string; validTo: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () => {
      const peer = socket.getPeerCertificate();
      socket.destroy();
      resolve({ serial: peer.serialNumber, validTo: peer.valid_to });
    });
    socket.on('error', reject);
  });
}

function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { logger: createLogger('info', { write: (text: string) => void lines.push(JSON.parse(text) as Record<string, unknown>) }), lines };
}

describe('certificate renewal', () => {
  it('serves a leaf reissued near expiry to new connections, without a restart', async (t) => {
    const tlsDir = await tempDir(t);
    await agentTlsMaterial({ tlsDir }); // the CA and a first leaf, as at start
    const ca = await loadOrCreateCa(tlsDir);
    // A server started long ago: it serves a leaf that now has 20 days left, also on disk.
    const ageing = await issueCertificate(ca, { ...AGENT_NAMES, days: 20 });
    await writeFile(join(tlsDir, 'agent.pem'), ageing.certPem);
    await writeFile(join(tlsDir, 'agent-key.pem'), ageing.keyPem);
    const sessions = { accept: (socket: { destroy(): void }) => socket.destroy(), openCount: 0, closeAll: async () => {} } as unknown as AgentSessions;
    const listener = new AgentListener({ host: '127.0.0.1', port: 0, cert: ageing.certPem, key: ageing.keyPem }, sessions);
    await listener.listen();
    t.after(() => listener.close(0));
    const before = await servedCertificate(listener.port, ca.certPem);
    assert.equal(before.serial, new X509Certificate(ageing.certPem).serialNumber);

    const { logger, lines } = capturedLogger();
    let applied = 0;
    const agent: RenewableCertificate = {
      name: 'agent',
      current: ageing.certPem,
      load: () => agentTlsMaterial({ tlsDir }),
      apply: ({ cert, key }) => {
        applied++;
        listener.replaceCertificate(cert, key);
      },
    };
    const renewal = new CertificateRenewal([agent], logger);
    await renewal.check();
    assert.equal(applied, 1);
    const after = await servedCertificate(listener.port, ca.certPem);
    assert.notEqual(after.serial, before.serial);
    assert.ok(Date.parse(after.validTo) > Date.now() + 300 * 86_400_000, `a full-length leaf: ${after.validTo}`);
    assert.equal(lines.filter((line) => line.msg === 'TLS certificate renewed: new connections get the new one').length, 1);

    // Nothing new on disk: nothing replaced.
    await renewal.check();
    assert.equal(applied, 1);
    assert.equal((await servedCertificate(listener.port, ca.certPem)).serial, after.serial);
  });

  it('keeps serving the current certificate when the new one cannot be had, and says so', async () => {
    const { logger, lines } = capturedLogger();
    let applied = 0;
    const renewal = new CertificateRenewal(
      [{ name: 'edge', current: 'pem', load: () => Promise.reject(new Error('EACCES: cannot write edge.pem')), apply: () => void applied++ }],
      logger,
    );
    await renewal.check();
    assert.equal(applied, 0);
    const failure = lines.find((line) => line.certificate === 'edge');
    assert.equal(failure?.level, 50);
    assert.match(String(failure?.msg), /renewal failed: the current one is still served/);
  });

  it('the edge certificates take the renewed names at once', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const first = await issueCertificate(ca, { dnsNames: ['old.example.com', '*.old.example.com'] });
    const second = await issueCertificate(ca, { dnsNames: ['new.example.com', '*.new.example.com'] });
    const certificates = new EdgeCertificates({ cert: first.certPem, key: first.keyPem, ca: undefined });
    assert.equal(certificates.covers('app.old.example.com'), true);
    certificates.replace({ cert: second.certPem, key: second.keyPem });
    assert.equal(certificates.covers('app.old.example.com'), false);
    assert.equal(certificates.covers('app.new.example.com'), true);
  });
});
