import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import { loadOrCreateCa } from '../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../src/tunnels/tls/certificates.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses, makeTempDir } from '../helpers/server-process.js';

/** The TLS port: SNI passthrough to a TLS endpoint (the agent side's certificate), unknown names refused. */

let server: TrafficServer;
let session: ngrok.Session;
let local: tls.Server;
let localCa: string;

before(async () => {
  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  // The local service's own certificate, from a CA burrow knows nothing about.
  const ca = await loadOrCreateCa(makeTempDir('local-ca-'));
  localCa = ca.certPem;
  const leaf = await issueCertificate(ca, { dnsNames: ['secure.burrow.localhost'] });
  local = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => {
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  await session?.close().catch(() => {});
  local?.close();
  await cleanupProcesses();
});

function handshake(servername: string | undefined, ca: string): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: server.tlsPort, ...(servername ? { servername } : {}), ca, timeout: 5_000 }, () => resolve(socket));
    socket.once('error', reject);
    socket.once('timeout', () => reject(new Error('timeout')));
  });
}

test('a tls endpoint gets the connection untouched: the client handshakes with the agent side’s certificate', { timeout: 30_000 }, async () => {
  const listener = await session.tlsEndpoint().domain('secure.burrow.localhost').listenAndForward(`tls://127.0.0.1:${(local.address() as net.AddressInfo).port}`);
  assert.equal(listener.url(), `tls://secure.burrow.localhost:${server.tlsPort}`);
  const socket = await handshake('secure.burrow.localhost', localCa);
  assert.equal(socket.authorized, true);
  assert.match(socket.getPeerCertificate().subjectaltname ?? '', /DNS:secure\.burrow\.localhost/);
  const echoed = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString())));
  socket.write('through the tunnel');
  assert.equal(await echoed, 'through the tunnel');
  socket.destroy();
  // burrow's own CA is not what the client met.
  await assert.rejects(handshake('secure.burrow.localhost', await import('node:fs').then((fs) => fs.readFileSync(server.caPath, 'utf8'))), /self[- ]signed|unable to (verify|get)/i);
  await listener.close();
});

test('an unknown name, or none, gets the unrecognized_name alert', { timeout: 30_000 }, async () => {
  await assert.rejects(handshake('nobody.burrow.localhost', localCa), /unrecognized name/i);
  await assert.rejects(handshake(undefined, localCa), /unrecognized name/i);
  // a name no endpoint can have (a trailing dot) is no match either: the alert, not a bare close
  await assert.rejects(handshake('secure.burrow.localhost.', localCa), /unrecognized name/i);
  let line: Record<string, unknown> | undefined;
  for (let i = 0; i < 40 && !line; i++) {
    line = server.logs().find((entry) => entry.event === 'public_connection' && entry.outcome === 'unrecognized_name');
    if (!line) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(line?.verdict, 'unrouted');
});

test('bytes that are not TLS are closed on', { timeout: 30_000 }, async () => {
  const socket = net.connect(server.tlsPort, '127.0.0.1');
  socket.on('error', () => {});
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await new Promise((resolve) => socket.once('close', resolve));
  assert.equal(Buffer.concat(chunks).length, 0);
});
