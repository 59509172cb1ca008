import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import { loadOrCreateCa } from '../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../src/tunnels/tls/certificates.js';
import { startPlainService, tlsExchange } from '../helpers/plain-service.js';
import { cleanupProcesses, makeTempDir } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * The terminate-tls action (HTTP-POLICY.md §2) on tls endpoints bound by the official SDK: burrow
 * terminates TLS and the agent's plain TCP service gets plaintext; with mutual TLS, only a client
 * whose certificate a CA of the policy issued gets through. Certificates are made by the test.
 */

let server: TrafficServer;
let session: ngrok.Session;
let burrowCa: Buffer;
let trustedCaPem: string;
let trustedClient: { certPem: string; keyPem: string };
let strangerClient: { certPem: string; keyPem: string };
let firstBytes: Buffer[] = [];
let localPort: number;
const closers: (() => unknown)[] = [];

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath);
  session = await connectAgent(server, await createToken(server));
  const trusted = await loadOrCreateCa(makeTempDir('client-ca-'));
  trustedCaPem = trusted.certPem;
  trustedClient = await issueCertificate(trusted, { dnsNames: ['client.example.com'] });
  strangerClient = await issueCertificate(await loadOrCreateCa(makeTempDir('other-ca-')), { dnsNames: ['client.example.com'] });
  const service = await startPlainService();
  firstBytes = service.firstBytes;
  localPort = service.port;
  closers.push(() => service.close());
});

after(async () => {
  for (const close of closers) await close();
  await session?.close().catch(() => {});
  await cleanupProcesses();
});

async function endpoint(host: string, config: Record<string, unknown> | undefined): Promise<void> {
  const policy = { on_tcp_connect: [{ actions: [{ type: 'terminate-tls', ...(config ? { config } : {}) }] }] };
  const listener = await session.tlsEndpoint().domain(host).trafficPolicy(JSON.stringify(policy)).listenAndForward(`tcp://127.0.0.1:${localPort}`);
  closers.unshift(() => listener.close().catch(() => {}));
}

const exchange = (host: string, message: string, options: tls.ConnectionOptions = {}) => tlsExchange(server.tlsPort, host, message, { ca: burrowCa, ...options });

test('terminate-tls on a tls endpoint: the client handshakes with burrow, the service reads plaintext', { timeout: 30_000 }, async () => {
  await endpoint('term.example.com', undefined);
  const before = firstBytes.length;
  const { greeting, echoed } = await exchange('term.example.com', 'clear text');
  assert.equal(greeting, 'plain');
  assert.equal(echoed, 'clear text');
  assert.equal(firstBytes[before]?.toString(), 'clear text');
});

test('max_version 1.2 refuses a client that only speaks TLS 1.3', { timeout: 30_000 }, async () => {
  await endpoint('old.example.com', { max_version: '1.2' });
  await assert.rejects(exchange('old.example.com', 'x', { minVersion: 'TLSv1.3' }));
  assert.equal((await exchange('old.example.com', 'ok', { maxVersion: 'TLSv1.2' })).echoed, 'ok');
});

test('mutual TLS: no certificate or one of another CA is refused; one the CA issued gets through', { timeout: 30_000 }, async () => {
  await endpoint('mtls.example.com', { mutual_tls_certificate_authorities: [trustedCaPem] });
  const reached = firstBytes.length;
  await assert.rejects(exchange('mtls.example.com', 'none'));
  await assert.rejects(exchange('mtls.example.com', 'stranger', { cert: strangerClient.certPem, key: strangerClient.keyPem }));
  assert.equal(firstBytes.length, reached, 'a refused client reached the service');
  const served = await exchange('mtls.example.com', 'trusted', { cert: trustedClient.certPem, key: trustedClient.keyPem });
  assert.equal(served.echoed, 'trusted');
});
