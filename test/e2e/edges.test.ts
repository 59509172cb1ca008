import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import { loadOrCreateCa } from '../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../src/tunnels/tls/certificates.js';
import { api, cleanupProcesses, makeTempDir } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';

/**
 * TLS edges with a tunnel-group backend (TUNNELS.md §4), end to end: the official SDK's labeled
 * tunnels forward to local TLS servers; a TLS client names the edge's hostport by SNI on the TLS
 * port and, TLS passed through, handshakes with the local server.
 */

const HOST = 'app.example.com';

let server: TrafficServer;
let session: ngrok.Session;
let localCa: string;
const closers: (() => unknown)[] = [];

interface LocalTls {
  port: number;
  /** Connections this local server accepted so far. */
  accepted: () => number;
  name: string;
}

/** A local TLS echo server that greets each connection with its name. */
async function localTlsServer(name: string, cert: { certPem: string; keyPem: string }): Promise<LocalTls> {
  let accepted = 0;
  const sockets = new Set<tls.TLSSocket>();
  const local = tls.createServer({ cert: cert.certPem, key: cert.keyPem }, (socket) => {
    accepted++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.write(`${name}\n`);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => local.close(resolve));
  });
  return { port: (local.address() as net.AddressInfo).port, accepted: () => accepted, name };
}

let first: LocalTls;
let second: LocalTls;
let other: LocalTls;

before(async () => {
  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  // The local services' certificate, from a CA burrow knows nothing about: passthrough is proven
  // when the client accepts it.
  const ca = await loadOrCreateCa(makeTempDir('local-ca-'));
  localCa = ca.certPem;
  const leaf = await issueCertificate(ca, { dnsNames: [HOST] });
  first = await localTlsServer('first', leaf);
  second = await localTlsServer('second', leaf);
  other = await localTlsServer('other', leaf);
});

after(async () => {
  await session?.close().catch(() => {});
  for (const close of closers) await close();
  await cleanupProcesses();
});

/** Connects through the edge and reads the greeting of the local server reached (or the error). */
function viaEdge(servername = HOST): Promise<{ greeting: string; socket: tls.TLSSocket }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: server.tlsPort, servername, ca: localCa, timeout: 5_000 });
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      if (buffered.includes('\n')) resolve({ greeting: buffered.slice(0, buffered.indexOf('\n')), socket });
    });
    socket.once('error', reject);
    socket.once('timeout', () => {
      socket.destroy();
      reject(new Error('timeout'));
    });
    socket.once('close', () => reject(new Error('closed before the greeting')));
  });
}

async function labeledTunnel(local: LocalTls, labels: Record<string, string>): Promise<ngrok.Listener> {
  let builder = session.labeledListener();
  for (const [key, value] of Object.entries(labels)) builder = builder.label(key, value);
  const listener = await builder.listenAndForward(`tls://127.0.0.1:${local.port}`);
  closers.unshift(() => listener.close().catch(() => {}));
  return listener;
}

async function edgeWithBackend(hostports: string[], labels: Record<string, string>): Promise<{ edgeId: string; groupId: string }> {
  const group = await api(server, 'POST', '/backends/tunnel_group', { body: { labels } });
  assert.equal(group.status, 201, group.text);
  const edge = await api(server, 'POST', '/edges/tls', { body: { hostports } });
  assert.equal(edge.status, 201, edge.text);
  const module = await api(server, 'PUT', `/edges/tls/${edge.body.id}/backend`, { body: { backend_id: group.body.id } });
  assert.equal(module.status, 200, module.text);
  return { edgeId: edge.body.id as string, groupId: group.body.id as string };
}

const reaches = () =>
  viaEdge().then(
    ({ socket }) => {
      socket.destroy();
      return true;
    },
    () => false,
  );

test('a TLS client reaches the labeled tunnel’s local server through the edge’s hostport, TLS passed through', { timeout: 30_000 }, async () => {
  await labeledTunnel(first, { app: 'web', tier: 'one' });
  const { edgeId, groupId } = await edgeWithBackend([`${HOST}:443`], { app: 'web' });

  const { greeting, socket } = await viaEdge();
  assert.equal(greeting, 'first');
  assert.equal(socket.authorized, true, 'the client trusted the local server’s certificate');
  assert.match(socket.getPeerCertificate().subjectaltname ?? '', /DNS:app\.example\.com/);
  const echoed = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString())));
  socket.write('through the edge');
  assert.equal(await echoed, 'through the edge');
  socket.destroy();

  // The group lists the live tunnel; the edge names its backend.
  const group = await api(server, 'GET', `/backends/tunnel_group/${groupId}`);
  assert.equal(group.body.tunnels.length, 1, group.text);
  const edge = await api(server, 'GET', `/edges/tls/${edgeId}`);
  assert.equal(edge.body.backend.backend.id, groupId, edge.text);

  let line: Record<string, unknown> | undefined;
  await within(2_000, async () => {
    line = server.logs().find((entry) => entry.event === 'public_connection' && entry.edge_id === edgeId);
    return line !== undefined;
  });
  assert.equal(line?.verdict, 'allowed');
});

test('two tunnels with the same labels share the edge’s connections; other labels get none', { timeout: 30_000 }, async () => {
  await labeledTunnel(second, { app: 'web', tier: 'two' });
  await labeledTunnel(other, { app: 'api' });
  const before = { first: first.accepted(), second: second.accepted() };
  const greetings = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const { greeting, socket } = await viaEdge();
    greetings.add(greeting);
    socket.destroy();
  }
  assert.deepEqual([...greetings].sort(), ['first', 'second']);
  assert.ok(first.accepted() > before.first && second.accepted() > before.second);
  assert.equal(other.accepted(), 0);
});

test('deleting the backend module stops routing within 1 s; putting it back restores it', { timeout: 30_000 }, async () => {
  const edges = await api(server, 'GET', '/edges/tls');
  const edgeId = (edges.body.tls_edges as { id: string; backend: { backend: { id: string } } }[])[0]!;
  assert.ok(await reaches());
  const deleted = await api(server, 'DELETE', `/edges/tls/${edgeId.id}/backend`);
  assert.equal(deleted.status, 204);
  const took = await within(2_000, async () => !(await reaches()));
  assert.ok(took <= 1_000, `routing stopped after ${took} ms`);
  const accepted = first.accepted() + second.accepted();
  // A closed connection: no unrecognized_name (the edge exists), no stream to any tunnel.
  await assert.rejects(viaEdge(), /closed|ECONNRESET|socket disconnected/i);
  assert.equal(first.accepted() + second.accepted(), accepted, 'a local server saw a connection after the delete');

  const put = await api(server, 'PUT', `/edges/tls/${edgeId.id}/backend`, { body: { backend_id: edgeId.backend.backend.id } });
  assert.equal(put.status, 200, put.text);
  await within(1_500, reaches);
});

test('a hostport naming an IPv4 address is reached by a client that sends that address as its SNI', { timeout: 30_000 }, async () => {
  await labeledTunnel(first, { app: 'by-ip' });
  await edgeWithBackend(['10.1.2.3:443'], { app: 'by-ip' });
  const greeting = await new Promise<string>((resolve, reject) => {
    // RFC 6066 has no IP names, but openssl -servername and Node send one when told to
    const socket = tls.connect({ host: '127.0.0.1', port: server.tlsPort, servername: '10.1.2.3', ca: localCa, checkServerIdentity: () => undefined, timeout: 5_000 });
    socket.once('data', (chunk: Buffer) => {
      resolve(chunk.toString().split('\n')[0]!);
      socket.destroy();
    });
    socket.once('error', reject);
    socket.once('timeout', () => socket.destroy(new Error('timeout')));
  });
  assert.equal(greeting, 'first');
});
