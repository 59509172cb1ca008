import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import { startPlainService, tlsExchange } from '../helpers/plain-service.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';

/**
 * The TLS edge's tls_termination module (HTTP-POLICY.md §5), end to end: with `terminate_at:
 * edge` burrow terminates TLS with the certificate it serves for the name and the official SDK's
 * labeled tunnel forwards plaintext to a plain TCP server; without the module, TLS passes through.
 */

const HOST = 'plain.example.com';

let server: TrafficServer;
let session: ngrok.Session;
let burrowCa: Buffer;
let edgeId: string;
/** The first bytes each connection brought to the local server, in order. */
let firstBytes: Buffer[] = [];
const closers: (() => unknown)[] = [];

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath);
  session = await connectAgent(server, await createToken(server));
  const service = await startPlainService();
  firstBytes = service.firstBytes;
  closers.push(() => service.close());
  const listener = await session.labeledListener().label('app', 'plain').listenAndForward(`tcp://127.0.0.1:${service.port}`);
  closers.unshift(() => listener.close().catch(() => {}));
  const group = await api(server, 'POST', '/backends/tunnel_group', { body: { labels: { app: 'plain' } } });
  assert.equal(group.status, 201, group.text);
  const edge = await api(server, 'POST', '/edges/tls', {
    body: { hostports: [`${HOST}:443`], backend: { backend_id: group.body.id }, tls_termination: { terminate_at: 'edge' } },
  });
  assert.equal(edge.status, 201, edge.text);
  edgeId = edge.body.id as string;
});

after(async () => {
  await session?.close().catch(() => {});
  for (const close of closers) await close();
  await cleanupProcesses();
});

/** A TLS client trusting burrow's CA: the greeting, then what the local server echoed of `message`. */
const exchange = (message: string, options: tls.ConnectionOptions = {}) => tlsExchange(server.tlsPort, HOST, message, { ca: burrowCa, ...options });

test('terminate_at edge: the client handshakes with burrow, the local server gets plaintext', { timeout: 30_000 }, async () => {
  const before = firstBytes.length;
  const { greeting, echoed } = await exchange('hello in clear');
  assert.equal(greeting, 'plain');
  assert.equal(echoed, 'hello in clear');
  assert.equal(firstBytes[before]?.toString(), 'hello in clear', 'the local server read the plaintext');
});

test('min_version 1.3 refuses a TLS 1.2 client and serves a TLS 1.3 one', { timeout: 30_000 }, async () => {
  const put = await api(server, 'PUT', `/edges/tls/${edgeId}/tls_termination`, { body: { terminate_at: 'edge', min_version: '1.3' } });
  assert.equal(put.status, 200, put.text);
  // the edge cache holds a module for at most half a second
  await within(2_000, async () => exchange('old', { maxVersion: 'TLSv1.2' }).then(() => false, () => true));
  const reached = firstBytes.length;
  await assert.rejects(exchange('old', { maxVersion: 'TLSv1.2' }));
  assert.equal(firstBytes.length, reached, 'no byte of the refused client reached the local server');
  await within(2_000, async () => server.logs().some((entry) => entry.event === 'public_connection' && entry.edge_id === edgeId && entry.outcome === 'tls_version'));
  const served = await exchange('new', { minVersion: 'TLSv1.3' });
  assert.equal(served.protocol, 'TLSv1.3');
  assert.equal(served.echoed, 'new');
});

test('deleting the module passes TLS through again: the local server reads a ClientHello', { timeout: 30_000 }, async () => {
  const deleted = await api(server, 'DELETE', `/edges/tls/${edgeId}/tls_termination`);
  assert.equal(deleted.status, 204);
  await within(2_000, async () => {
    const before = firstBytes.length;
    // the plain server's greeting is no TLS record: the client's handshake fails
    await exchange('x').catch(() => {});
    return firstBytes.length > before && firstBytes.at(-1)![0] === 0x16;
  });
  assert.equal(firstBytes.at(-1)![0], 0x16, 'a TLS handshake record reached the local server');
});
