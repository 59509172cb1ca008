// @test-pass sqlite
import { NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';
import assert from 'node:assert/strict';
import net from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { AgentConnection, ProtocolStream } from '../../../src/tunnels/protocol/index.js';
import type { ProxyHeader } from '../../../src/tunnels/protocol/messages.js';
import { KINDS, MAX_PROXY_STREAMS_PER_AGENT, ProxyOpener } from '../../../src/tunnels/public/opener.js';
import { noDelayFromSecondWrite, splice } from '../../../src/tunnels/public/splice.js';
import { TcpEndpoints } from '../../../src/tunnels/public/tcp-endpoints.js';
import { AgentRefusal } from '../../../src/domain/tunnels/agent-errors.js';
import { EndpointPool, type LiveTunnel } from '../../../src/tunnels/registry.js';

class FakeConnection {
  closed = false;
  authenticated = true;
  proxyStreamsOpen = 0;
  readonly headers: ProxyHeader[] = [];
  readonly streams: { header: ProxyHeader; written: Buffer[] }[] = [];
  openProxy(header: ProxyHeader): ProtocolStream {
    this.headers.push(header);
    const written: Buffer[] = [];
    const stream = new PassThrough() as unknown as ProtocolStream;
    stream.on('data', (chunk: Buffer) => written.push(chunk));
    this.streams.push({ header, written });
    return stream;
  }
}

function tunnel(id: string, sessionId: string, proxyProto: 0 | 1 | 2 = 0): LiveTunnel {
  return { id, sessionId, accountId: 'acct_1', proto: 'tcp', url: 'tcp://127.0.0.1:20000', labels: null, proxyProto, policy: NO_POLICY };
}

/** The public socket's two ends, as the opener reads them. */
const ends = { remoteAddress: '198.51.100.4', remotePort: 40000, localAddress: '127.0.0.1', localPort: 20000 };

test('round-robin over the pool, every header field per kind', () => {
  const a = new FakeConnection();
  const b = new FakeConnection();
  const opener = new ProxyOpener({ connectionOf: (id) => ({ a, b })[id] as unknown as AgentConnection });
  const pool = new EndpointPool('tcp://127.0.0.1:20000', 'ep_1', true);
  pool.tunnels.push(tunnel('tn_a', 'a'), tunnel('tn_b', 'b'));
  const picked = [1, 2, 3, 4].map(() => opener.open(pool, KINDS.tcp, ends)!.tunnel.id);
  assert.deepEqual(picked.sort(), ['tn_a', 'tn_a', 'tn_b', 'tn_b']);
  assert.deepEqual(a.headers[0], { id: 'tn_a', clientAddr: '198.51.100.4:40000', proto: 'tcp', edgeType: '1', passthroughTls: false });
  assert.deepEqual(KINDS.tls, { proto: 'tls', edgeType: '2', passthroughTls: true });
  assert.deepEqual(KINDS.https, { proto: 'https', edgeType: '3', passthroughTls: false });
  assert.deepEqual(KINDS.http, { proto: 'http', edgeType: '3', passthroughTls: false });
});

test('an agent at its stream cap, closed or gone is skipped; none left → undefined', () => {
  const full = new FakeConnection();
  full.proxyStreamsOpen = MAX_PROXY_STREAMS_PER_AGENT;
  const closed = new FakeConnection();
  closed.closed = true;
  const ok = new FakeConnection();
  const connections: Record<string, FakeConnection> = { full, closed, ok };
  const opener = new ProxyOpener({ connectionOf: (id) => connections[id] as unknown as AgentConnection });
  const pool = new EndpointPool('tcp://127.0.0.1:20000', 'ep_1', true);
  pool.tunnels.push(tunnel('tn_full', 'full'), tunnel('tn_closed', 'closed'), tunnel('tn_gone', 'gone'), tunnel('tn_ok', 'ok'));
  for (let i = 0; i < 5; i++) assert.equal(opener.open(pool, KINDS.tcp, ends)?.tunnel.id, 'tn_ok');
  assert.equal(full.headers.length, 0);
  ok.proxyStreamsOpen = MAX_PROXY_STREAMS_PER_AGENT;
  assert.equal(opener.open(pool, KINDS.tcp, ends), undefined);
  assert.equal(opener.open(new EndpointPool('x', 'ep_2', false), KINDS.tcp, ends), undefined);
});

test('a bind with ProxyProto gets the PROXY header before any byte of the client', async () => {
  const connection = new FakeConnection();
  const opener = new ProxyOpener({ connectionOf: () => connection as unknown as AgentConnection });
  const pool = new EndpointPool('tcp://127.0.0.1:20000', 'ep_1', false);
  pool.tunnels.push(tunnel('tn_p', 's', 1));
  const opened = opener.open(pool, KINDS.tcp, ends)!;
  opened.stream.write('payload');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(Buffer.concat(connection.streams[0]!.written).toString(), 'PROXY TCP4 198.51.100.4 127.0.0.1 40000 20000\r\npayload');
});

test('without ProxyProto the local address is not asked for (a getsockname() per connection)', () => {
  const connection = new FakeConnection();
  const opener = new ProxyOpener({ connectionOf: () => connection as unknown as AgentConnection });
  const pool = new EndpointPool('tcp://127.0.0.1:20000', 'ep_1', false);
  pool.tunnels.push(tunnel('tn_plain', 's'));
  const asked: string[] = [];
  const socket = {
    remoteAddress: '198.51.100.4',
    remotePort: 40000,
    get localAddress() {
      asked.push('localAddress');
      return '127.0.0.1';
    },
    get localPort() {
      asked.push('localPort');
      return 20000;
    },
  };
  assert.ok(opener.open(pool, KINDS.tcp, socket));
  assert.deepEqual(asked, []);
});

/** Two connected TCP socket pairs: [a's client, a's server side] and the same for b. */
async function socketPair(): Promise<[net.Socket, net.Socket, () => void]> {
  const accepted: net.Socket[] = [];
  const server = net.createServer({ allowHalfOpen: true }, (socket) => accepted.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = net.connect({ port: (server.address() as net.AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
  while (accepted.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  return [client, accepted[0]!, () => server.close()];
}

function collect(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.once('end', () => resolve(text));
  });
}

test('splice: bytes both ways, half-close each way, then both closed', async () => {
  const [a, aInner, closeA] = await socketPair();
  const [b, bInner, closeB] = await socketPair();
  let finished = false;
  splice(aInner, bInner, () => (finished = true));
  const atB = collect(b);
  a.end('from a');
  assert.equal(await atB, 'from a'); // a's FIN reached b
  const atA = collect(a);
  b.write('b still talks after a finished');
  b.end();
  assert.equal(await atA, 'b still talks after a finished');
  for (let i = 0; i < 100 && !finished; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(finished);
  assert.ok(aInner.destroyed && bInner.destroyed);
  closeA();
  closeB();
});

test('splice: one side failing closes the other', async () => {
  const [a, aInner, closeA] = await socketPair();
  const [b, bInner, closeB] = await socketPair();
  b.on('error', () => {});
  let error: Error | undefined;
  splice(aInner, bInner, (e) => (error = e));
  a.resetAndDestroy();
  // b allows half-open: burrow's side going away shows as its end (or a reset).
  await new Promise<void>((resolve) => {
    b.once('end', () => resolve());
    b.once('close', () => resolve());
    b.resume();
  });
  for (let i = 0; i < 100 && !error; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(error);
  assert.ok(bInner.destroyed);
  b.destroy();
  closeA();
  closeB();
});

test('TCP endpoint ports: a port in use is a 307 refusal; open is idempotent; close frees the port', async () => {
  const squatter = net.createServer();
  await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  const taken = (squatter.address() as net.AddressInfo).port;
  const endpoints = new TcpEndpoints('127.0.0.1', '127.0.0.1', (socket) => socket.destroy());
  await assert.rejects(endpoints.open(taken), (error: unknown) => error instanceof AgentRefusal && error.code === 307 && /in use by another program/.test(error.message));
  squatter.close();
  await new Promise((resolve) => squatter.once('close', resolve));
  await endpoints.open(taken);
  await endpoints.open(taken);
  assert.deepEqual(endpoints.openPorts, [taken]);
  endpoints.close(taken);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const again = net.createServer();
  await new Promise<void>((resolve, reject) => {
    again.once('error', reject);
    again.listen(taken, '127.0.0.1', resolve);
  });
  again.close();
});

test('splice: a side destroyed without an error after the other half-closed still ends the splice', async () => {
  const [a, aInner, closeA] = await socketPair();
  const [b, bInner, closeB] = await socketPair();
  b.on('error', () => {});
  let done: { error: Error | undefined } | undefined;
  splice(aInner, bInner, (error) => (done = { error }));
  const atB = collect(b);
  a.end('bye');
  assert.equal(await atB, 'bye'); // direction a → b is over; b → a still open
  bInner.destroy(); // the proxy stream goes away (no error, no end)
  for (let i = 0; i < 100 && !done; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(done, 'done never ran');
  assert.ok(done.error, 'a premature close is a failure');
  assert.ok(aInner.destroyed);
  closeA();
  closeB();
});

test('Nagle is turned off on the public socket just before the second chunk is written to it, once', async () => {
  const [client, accepted, close] = await socketPair();
  const source = new PassThrough();
  const events: string[] = [];
  const setNoDelay = accepted.setNoDelay.bind(accepted);
  accepted.setNoDelay = (on?: boolean) => (events.push(`noDelay ${on}`), setNoDelay(on));
  const write = accepted.write.bind(accepted) as (chunk: Buffer) => boolean;
  (accepted as unknown as { write: (chunk: Buffer) => boolean }).write = (chunk: Buffer) => (events.push(`write ${chunk}`), write(chunk));
  noDelayFromSecondWrite(accepted, source);
  source.pipe(accepted);
  const received = collect(client);
  for (const chunk of ['one', 'two', 'three']) {
    source.write(Buffer.from(chunk));
    await new Promise((resolve) => setImmediate(resolve));
  }
  source.end();
  assert.equal(await received, 'onetwothree');
  assert.deepEqual(events, ['write one', 'noDelay true', 'write two', 'write three']);
  client.destroy();
  accepted.destroy();
  close();
});
