// @test-pass sqlite
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { clientKey } from '../../../src/tunnels/public/tcp-limits.js';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../../helpers/data-plane.js';
import { cleanupProcesses } from '../../helpers/server-process.js';
import { hostPort } from '../../helpers/traffic.js';

/**
 * A TCP endpoint's fair share and idle timeout (issue 29 item 10): one address holding 500 idle
 * connections (the agent's stream cap) used to take the endpoint offline for everyone else.
 */

const IDLE_MS = 3_000;

describe('clientKey: whose share a connection counts against', () => {
  it('an IPv4 address as itself (IPv4-mapped too); an IPv6 one by its /64', () => {
    assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
    assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8:1:2::9'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:0db8:0001:0002:ffff::1'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(clientKey('::1'), '0:0:0:0::/64');
    assert.equal(clientKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
  });
});

interface Client {
  socket: net.Socket;
  openedAt: number;
  closedAt: number | undefined;
}

function connectFrom(port: number, localAddress: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => resolve(client));
    const client: Client = { socket, openedAt: Date.now(), closedAt: undefined };
    socket.on('error', () => {});
    socket.once('close', () => (client.closedAt = Date.now()));
    socket.once('error', reject);
  });
}

async function echoes(client: Client, text: string): Promise<boolean> {
  const got = new Promise<boolean>((resolve) => {
    client.socket.once('data', (data) => resolve(data.toString() === text));
    client.socket.once('close', () => resolve(false));
  });
  client.socket.write(text);
  return Promise.race([got, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000))]);
}

async function serverWithTunnel(env: Record<string, string>): Promise<{ server: DataPlaneServer; session: ngrok.Session; port: number }> {
  const server = await startDataPlaneServer({ env });
  const { token } = await makeCredential(server, []);
  const session = await new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert()).connect();
  const listener = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${(echoServer.address() as net.AddressInfo).port}`);
  return { server, session, port: hostPort(listener.url()!).port };
}

let echoServer: net.Server;
const sessions: ngrok.Session[] = [];

before(async () => {
  echoServer = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => echoServer.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  for (const session of sessions) await session.close().catch(() => undefined);
  echoServer?.close();
  await cleanupProcesses();
});

describe('public TCP connections: fair share and idle timeout', () => {
  let server: DataPlaneServer;
  let port: number;
  let session: ngrok.Session;
  const held: Client[] = [];

  before(async () => {
    // the default share (50 per client and endpoint); a short idle timeout
    const started = await serverWithTunnel({ EDGE_TCP_IDLE_TIMEOUT_MS: String(IDLE_MS) });
    ({ server, port, session } = started);
    sessions.push(session);
  });

  after(() => {
    for (const client of held) client.socket.destroy();
  });

  it('one address opening 500 idle connections gets half the agent’s streams; a second its share (50); a third still connects', async () => {
    const first = await Promise.all(Array.from({ length: 500 }, () => connectFrom(port, '127.0.0.1')));
    held.push(...first);
    await waitFor('the connections past the first address’s share closed', () => first.filter((c) => c.closedAt !== undefined).length >= 250, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const open = first.filter((c) => c.closedAt === undefined);
    assert.equal(open.length, 250, 'up to 250 (the endpoint is busy from there), then refused');
    assert.ok(await echoes(open[0]!, 'still served'), 'an admitted connection is carried');

    // the endpoint is busy now: another address gets its share of 50, no more
    const second = await Promise.all(Array.from({ length: 60 }, () => connectFrom(port, '127.0.0.4')));
    held.push(...second);
    await waitFor('the second address’s extra connections closed', () => second.filter((c) => c.closedAt !== undefined).length >= 10, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(second.filter((c) => c.closedAt === undefined).length, 50);

    const third = await connectFrom(port, '127.0.0.2');
    held.push(third);
    assert.ok(await echoes(third, 'hello from another address'), 'another client is not shut out');

    await waitFor('the log lines', () => server.logs().filter((line) => line.outcome === 'client_limit').length >= 260);
    const refused = server.logs().filter((line) => line.outcome === 'client_limit');
    assert.equal(refused.length, 260);
    assert.equal(refused.filter((line) => String(line.client_addr).startsWith('127.0.0.1:')).length, 250);
  });

  it('idle connections are closed after EDGE_TCP_IDLE_TIMEOUT_MS; active ones stay', async () => {
    const idle = await connectFrom(port, '127.0.0.3');
    const active = await connectFrom(port, '127.0.0.3');
    held.push(idle, active);
    assert.ok(await echoes(idle, 'once'));
    const lastActivity = Date.now();
    const deadline = Date.now() + IDLE_MS * 2;
    while (Date.now() < deadline && idle.closedAt === undefined) {
      assert.ok(await echoes(active, 'ping'), 'the active connection is carried');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await waitFor('the idle connection closed', () => idle.closedAt !== undefined, IDLE_MS * 2);
    const idleFor = idle.closedAt! - lastActivity;
    assert.ok(idleFor >= IDLE_MS - 200 && idleFor < IDLE_MS * 2.5, `closed after ${idleFor} ms idle`);
    assert.equal(active.closedAt, undefined, 'the active connection is still open');
    assert.ok(await echoes(active, 'still here'));
    // the share is given back as connections close: the 50 idle ones of the first test are gone too
    await waitFor('the held connections closed', () => held.slice(0, 560).every((c) => c.closedAt !== undefined), IDLE_MS * 3);
    const again = await connectFrom(port, '127.0.0.1');
    held.push(again);
    assert.ok(await echoes(again, 'a place again'));
    await waitFor('the idle_timeout line', () => server.logs().some((line) => line.outcome === 'idle_timeout'));
  });

  it('a tls endpoint (passed through) has the same share and idle timeout', async () => {
    // a local service that accepts and never answers: each TLS handshake waits, the connection idle
    const local = new Set<net.Socket>();
    let reached = 0;
    const silent = net.createServer((socket) => {
      reached++;
      local.add(socket);
      socket.on('error', () => {});
      socket.once('close', () => local.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const host = 'limits.burrow.localhost';
    const listener = await session.tlsEndpoint().domain(host).listenAndForward(`tls://127.0.0.1:${(silent.address() as net.AddressInfo).port}`);
    const clients = Array.from({ length: 300 }, () => {
      const tcp = net.connect({ host: '127.0.0.1', port: server.plane.tlsPort, localAddress: '127.0.0.6' });
      tcp.on('error', () => {});
      const socket = tls.connect({ socket: tcp, servername: host });
      const client: Client = { socket, openedAt: Date.now(), closedAt: undefined };
      socket.on('error', () => {});
      socket.once('close', () => (client.closedAt = Date.now()));
      return client;
    });
    try {
      await waitFor('the connections past the share closed', () => clients.filter((c) => c.closedAt !== undefined).length >= 50, 10_000);
      await waitFor('the admitted connections reached the local service', () => reached >= 250, 10_000);
      // counted as they arrive, not as they stay open: on a busy machine the first may meet their
      // idle timeout (3 s) before the last arrive
      assert.equal(reached, 250);
      await waitFor('the idle ones closed', () => clients.every((c) => c.closedAt !== undefined), IDLE_MS * 3);
      const logs = server.logs().filter((line) => line.proto === 'tls');
      assert.equal(logs.filter((line) => line.outcome === 'client_limit').length, 50);
      assert.equal(logs.filter((line) => line.outcome === 'idle_timeout').length, 250);
    } finally {
      for (const client of clients) client.socket.destroy();
      await listener.close();
      for (const socket of local) socket.destroy();
      silent.close();
    }
  });
});

describe('public TCP connections with both limits off (0)', () => {
  it('one address may hold more than 250 connections, and idle ones stay open', async () => {
    const { port, session } = await serverWithTunnel({ EDGE_TCP_IDLE_TIMEOUT_MS: '0', EDGE_TCP_CONNECTIONS_PER_CLIENT: '0' });
    sessions.push(session);
    const clients = await Promise.all(Array.from({ length: 300 }, () => connectFrom(port, '127.0.0.1')));
    try {
      assert.ok(await echoes(clients[299]!, 'the 300th'));
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS + 500));
      assert.equal(clients.filter((c) => c.closedAt !== undefined).length, 0);
    } finally {
      for (const client of clients) client.socket.destroy();
    }
  });
});
