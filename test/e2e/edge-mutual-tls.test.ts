import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type https from 'node:https';
import { after, before, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import type { IssuedCertificate } from '../../src/tunnels/tls/certificates.js';
import { httpsGet, makeEdgeTlsCertificates, startHelloService, TLS_HEADERS_POLICY } from '../helpers/edge-tls.js';
import { startPlainService, tlsExchange } from '../helpers/plain-service.js';
import { cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * The agents' edge TLS options (HTTP-POLICY.md §4) from the official SDK: `.mutualTlsca()` on https
 * and tls endpoints (client certificates required and checked against the agent's CAs at burrow),
 * `.termination(cert, key)` on tls endpoints (burrow terminates with the agent's certificate, the
 * service reads plaintext), the `conn.tls.*` variables a policy reads, and set-vars in
 * on_tcp_connect. Certificates are made by the test.
 */

let server: TrafficServer;
let session: ngrok.Session;
let burrowCa: string;
let clientCaPem: string;
let trusted: IssuedCertificate;
let stranger: IssuedCertificate;
let serverCaPem: string;
let agentLeaf: IssuedCertificate;
let plain: Awaited<ReturnType<typeof startPlainService>>;
let web: http.Server;
const seen: http.IncomingHttpHeaders[] = [];
const closers: (() => unknown)[] = [];

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath, 'utf8');
  session = await connectAgent(server, await createToken(server));
  ({ clientCaPem, trusted, stranger, agentCaPem: serverCaPem, agentLeaf } = await makeEdgeTlsCertificates(['own-cert.example.com', 'both.example.com', 'pooled-tls.example.com']));
  plain = await startPlainService();
  closers.push(() => plain.close());
  web = await startHelloService(seen);
  closers.push(() => new Promise((resolve) => web.close(resolve)));
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await session?.close().catch(() => {});
  await cleanupProcesses();
});

function keep(listener: ngrok.Listener): void {
  closers.push(() => listener.close().catch(() => {}));
}

const get = (host: string, options: https.RequestOptions = {}) => httpsGet('127.0.0.1', server.tlsPort, host, { ca: burrowCa, ...options });

test('https with .mutualTlsca(): a client certificate from the CA is served, and conn.tls.* reach the policy', { timeout: 60_000 }, async () => {
  const host = 'mtls-https.example.com';
  const listener = await session.httpEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).trafficPolicy(TLS_HEADERS_POLICY).listenAndForward(`http://127.0.0.1:${(web.address() as { port: number }).port}`);
  keep(listener);
  const answer = await get(host, { cert: trusted.certPem, key: trusted.keyPem, maxVersion: 'TLSv1.2' });
  assert.equal(answer.status, 200);
  const headers = seen.at(-1)!;
  assert.equal(headers['x-tls-version'], '1.2');
  assert.equal(headers['x-tls-sni'], host);
  assert.match(String(headers['x-tls-cipher']), /^TLS_/);
  assert.equal(headers['x-client-cn'], 'client.example.com');
  const serial = new (await import('node:crypto')).X509Certificate(trusted.certPem).serialNumber.toLowerCase().replace(/^0+/, '');
  assert.equal(headers['x-client-serial'], serial);
  assert.match(String(headers['x-client-not-after']), /^\d{4}-\d\d-\d\dT/);
  assert.match(String(headers['x-client-sig']), /^(ECDSA-SHA\d+|SHA\d+-RSA)$/);
  assert.match(String(headers['x-server-dns']), /example\.com|burrow\.localhost/);
});

test('https with .mutualTlsca(): no certificate, or one of another CA, is refused before any request reaches the agent', { timeout: 60_000 }, async () => {
  const host = 'mtls-refused.example.com';
  keep(await session.httpEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).listenAndForward(`http://127.0.0.1:${(web.address() as { port: number }).port}`));
  const before = seen.length;
  await assert.rejects(get(host));
  await assert.rejects(get(host, { cert: stranger.certPem, key: stranger.keyPem }));
  assert.equal(seen.length, before, 'a refused client reached the agent');
  assert.equal((await get(host, { cert: trusted.certPem, key: trusted.keyPem })).status, 200);
});

test('tls with .termination(cert, key): burrow serves the agent\'s certificate and the service reads plaintext', { timeout: 60_000 }, async () => {
  const host = 'own-cert.example.com';
  keep(await session.tlsEndpoint().domain(host).termination(Buffer.from(agentLeaf.certPem), Buffer.from(agentLeaf.keyPem)).listenAndForward(`tcp://127.0.0.1:${plain.port}`));
  const reached = plain.firstBytes.length;
  // trusted only through the agent's CA: burrow's own certificate would fail this handshake
  const { greeting, echoed } = await tlsExchange(server.tlsPort, host, 'in the clear', { ca: serverCaPem });
  assert.equal(greeting, 'plain');
  assert.equal(echoed, 'in the clear');
  assert.equal(plain.firstBytes[reached]?.toString(), 'in the clear');
  await assert.rejects(tlsExchange(server.tlsPort, host, 'x', { ca: burrowCa }), 'burrow\'s certificate was served');
});

test('tls with .mutualTlsca() and .termination(): only a client the CA issued gets through', { timeout: 60_000 }, async () => {
  const host = 'both.example.com';
  keep(await session.tlsEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).termination(Buffer.from(agentLeaf.certPem), Buffer.from(agentLeaf.keyPem)).listenAndForward(`tcp://127.0.0.1:${plain.port}`));
  const reached = plain.firstBytes.length;
  await assert.rejects(tlsExchange(server.tlsPort, host, 'none', { ca: serverCaPem }));
  await assert.rejects(tlsExchange(server.tlsPort, host, 'stranger', { ca: serverCaPem, cert: stranger.certPem, key: stranger.keyPem }));
  assert.equal(plain.firstBytes.length, reached, 'a refused client reached the service');
  assert.equal((await tlsExchange(server.tlsPort, host, 'trusted', { ca: serverCaPem, cert: trusted.certPem, key: trusted.keyPem })).echoed, 'trusted');
});

test('a pooled tls endpoint whose tunnels ask different edge TLS: each connection picks its tunnel first, then meets that tunnel’s TLS', { timeout: 60_000 }, async () => {
  const host = 'pooled-tls.example.com';
  const cert = Buffer.from(agentLeaf.certPem);
  const key = Buffer.from(agentLeaf.keyPem);
  keep(await session.tlsEndpoint().domain(host).poolingEnabled(true).termination(cert, key).listenAndForward(`tcp://127.0.0.1:${plain.port}`));
  keep(await session.tlsEndpoint().domain(host).poolingEnabled(true).mutualTlsca(Buffer.from(clientCaPem)).termination(cert, key).listenAndForward(`tcp://127.0.0.1:${plain.port}`));
  // without a client certificate: through on one tunnel, refused by the other's MutualTLSAtEdge
  const outcomes: string[] = [];
  for (let i = 0; i < 6; i++) {
    outcomes.push(await tlsExchange(server.tlsPort, host, 'x', { ca: serverCaPem }).then(({ echoed }) => (echoed === 'x' ? 'through' : 'odd'), () => 'refused'));
  }
  assert.deepEqual([...outcomes].sort(), ['refused', 'refused', 'refused', 'through', 'through', 'through'], outcomes.join(' '));
  for (let i = 1; i < outcomes.length; i++) assert.notEqual(outcomes[i], outcomes[i - 1], `round-robin over the two tunnels: ${outcomes.join(' ')}`);
  for (let i = 0; i < 4; i++) assert.equal((await tlsExchange(server.tlsPort, host, 'trusted', { ca: serverCaPem, cert: trusted.certPem, key: trusted.keyPem })).echoed, 'trusted');
});

test('tls with .mutualTlsca() alone: burrow terminates with its own certificate and checks the client', { timeout: 60_000 }, async () => {
  const host = 'edge-only.example.com';
  keep(await session.tlsEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).listenAndForward(`tcp://127.0.0.1:${plain.port}`));
  await assert.rejects(tlsExchange(server.tlsPort, host, 'none', { ca: burrowCa }));
  assert.equal((await tlsExchange(server.tlsPort, host, 'trusted', { ca: burrowCa, cert: trusted.certPem, key: trusted.keyPem })).echoed, 'trusted');
});

test('bad PEM is refused at bind with the reference\'s code, naming the option', { timeout: 60_000 }, async () => {
  await assert.rejects(session.httpEndpoint().domain('bad-ca.example.com').mutualTlsca(Buffer.from('not a certificate')).listen(), (error: Error) => {
    assert.match(error.message, /ERR_NGROK_1922/);
    assert.match(error.message, /MutualTLSCA/);
    return true;
  });
  await assert.rejects(session.tlsEndpoint().domain('bad-key.example.com').termination(Buffer.from(agentLeaf.certPem), Buffer.from('junk')).listen(), (error: Error) => {
    assert.match(error.message, /ERR_NGROK_1901/);
    assert.match(error.message, /TLSTermination/);
    assert.ok(!error.message.includes('junk'));
    return true;
  });
  // the same options where they do not apply: refused by name
  await assert.rejects(session.httpEndpoint().domain('plain-mtls.example.com').scheme('HTTP').mutualTlsca(Buffer.from(clientCaPem)).listen(), /ERR_NGROK_301[\s\S]*MutualTLSCA|MutualTLSCA[\s\S]*ERR_NGROK_301/);
});

test('on_tcp_connect: set-vars and conn.tls.sni decide before the handshake', { timeout: 60_000 }, async () => {
  const policy = `
on_tcp_connect:
  - actions:
      - type: set-vars
        config: {vars: [{name: "\${conn.tls.sni}"}]}
  - expressions: ["vars.name.startsWith('closed')"]
    actions: [{type: deny}]
  - actions: [{type: terminate-tls}]
`;
  for (const host of ['closed-sni.example.com', 'open-sni.example.com']) {
    keep(await session.tlsEndpoint().domain(host).trafficPolicy(policy).listenAndForward(`tcp://127.0.0.1:${plain.port}`));
  }
  await assert.rejects(tlsExchange(server.tlsPort, 'closed-sni.example.com', 'x', { ca: burrowCa }));
  assert.equal((await tlsExchange(server.tlsPort, 'open-sni.example.com', 'open', { ca: burrowCa })).echoed, 'open');
});
