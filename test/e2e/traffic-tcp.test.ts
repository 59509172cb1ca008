import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { connectAgent, createToken, hostPort, rssOf, spawnAgent, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/** TCP endpoints end to end: burrow serve + the official SDK forwarding to local servers here. */

let server: TrafficServer;
let token: string;
let session: ngrok.Session;
const closers: (() => unknown)[] = [];

before(async () => {
  server = await startDataPlane({ tcpPortCount: 16 });
  token = await createToken(server);
  session = await connectAgent(server, token);
});

after(async () => {
  for (const close of closers) await close();
  await session?.close().catch(() => {});
  await cleanupProcesses();
});

async function localServer(onSocket: (socket: net.Socket) => void): Promise<number> {
  const local = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    onSocket(socket);
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  const sockets = new Set<net.Socket>();
  local.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // The SDK leaves a local connection open when it was blocked writing into a stream that burrow
  // then reset (the backpressure test): cut what is left rather than wait for it.
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => local.close(resolve));
  });
  return (local.address() as net.AddressInfo).port;
}

async function tcpTunnel(localPort: number, configure?: (builder: ngrok.TcpListenerBuilder) => void): Promise<{ host: string; port: number; listener: ngrok.Listener }> {
  const builder = session.tcpEndpoint();
  configure?.(builder);
  const listener = await builder.listenAndForward(`tcp://127.0.0.1:${localPort}`);
  closers.push(() => listener.close().catch(() => {}));
  return { ...hostPort(listener.url()!), listener };
}

function connect(port: number, host = '127.0.0.1'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host, allowHalfOpen: true }, () => resolve(socket));
    socket.once('error', reject);
  });
}

function readAll(socket: net.Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('end', () => resolve(Buffer.concat(chunks)));
    socket.once('error', reject);
  });
}

describe('TCP endpoints', () => {
  let echoPort: number;
  let echo: { host: string; port: number };

  before(async () => {
    echoPort = await localServer((socket) => socket.pipe(socket));
    echo = await tcpTunnel(echoPort);
  });

  test('10 MB of random bytes come back byte-exact', { timeout: 30_000 }, async () => {
    const data = randomBytes(10 * 1024 * 1024);
    const socket = await connect(echo.port, echo.host);
    const answer = readAll(socket);
    socket.end(data);
    const received = await answer;
    assert.equal(received.length, data.length);
    assert.ok(received.equals(data), 'the echoed bytes differ');
  });

  test('the client half-closes and still reads the whole answer', { timeout: 30_000 }, async () => {
    // The local server answers only once it has seen the client's end: the digest of all it got.
    const port = await localServer((socket) => {
      const hash = createHash('sha256');
      socket.on('data', (chunk: Buffer) => hash.update(chunk));
      socket.once('end', () => socket.end(hash.digest('hex')));
    });
    const tunnel = await tcpTunnel(port);
    const data = randomBytes(300_000);
    const socket = await connect(tunnel.port, tunnel.host);
    const answer = readAll(socket);
    socket.end(data);
    assert.equal((await answer).toString(), createHash('sha256').update(data).digest('hex'));
  });

  test('the local server half-closes and still reads what the client sends after', { timeout: 30_000 }, async () => {
    let resolveLate!: (value: string) => void;
    const late = new Promise<string>((resolve) => (resolveLate = resolve));
    const port = await localServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.once('end', () => resolveLate(Buffer.concat(chunks).toString()));
      socket.end('greeting');
    });
    const tunnel = await tcpTunnel(port);
    const socket = await connect(tunnel.port, tunnel.host);
    const greeting = await readAll(socket); // the server's FIN reached the client
    assert.equal(greeting.toString(), 'greeting');
    socket.end('sent after your FIN');
    assert.equal(await late, 'sent after your FIN');
  });

  test('200 connections in parallel through one tunnel', { timeout: 30_000 }, async () => {
    const results = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const data = randomBytes(16 * 1024);
        const socket = await connect(echo.port, echo.host);
        const answer = readAll(socket);
        socket.end(data);
        return (await answer).equals(data);
      }),
    );
    assert.equal(results.filter(Boolean).length, 200);
  });

  test('one log line per connection, with its id, endpoint, client and bytes; traffic metrics', { timeout: 30_000 }, async () => {
    const socket = await connect(echo.port, echo.host);
    const clientPort = socket.localPort;
    const answer = readAll(socket);
    socket.end('12345');
    await answer;
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 40 && !line; i++) {
      line = server.logs().find((entry) => entry.event === 'public_connection' && entry.client_addr === `127.0.0.1:${clientPort}`);
      if (!line) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(line, 'no log line for the connection');
    assert.match(String(line.conn_id), /^conn_[0-9A-Za-z]{27}$/);
    assert.match(String(line.endpoint_id), /^ep_/);
    assert.match(String(line.tunnel_id), /^tn_/);
    assert.equal(line.proto, 'tcp');
    assert.equal(line.verdict, 'allowed');
    assert.equal(line.bytes_in, 5);
    assert.equal(line.bytes_out, 5);
    assert.equal(typeof line.duration_ms, 'number');
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /burrow_public_connections_total\{proto="tcp",verdict="allowed"\} [1-9]\d*/);
    assert.match(metrics, /burrow_public_bytes_total\{proto="tcp",direction="in"\} [1-9]\d*/);
    assert.match(metrics, /burrow_agent_sessions [1-9]/);
    assert.match(metrics, /burrow_tunnels\{proto="tcp"\} [1-9]/);
    // the protos no tunnel uses read 0 rather than vanish
    for (const proto of ['tls', 'labeled']) assert.match(metrics, new RegExp(`burrow_tunnels\\{proto="${proto}"\\} 0\\n`));
    assert.doesNotMatch(metrics, /127\.0\.0\.1|tn_|ep_|conn_/);
  });
});

test('a client that reads nothing while the local server writes 100 MB leaves burrow’s memory flat', { timeout: 30_000 }, async () => {
  let written = 0;
  const port = await localServer((socket) => {
    const chunk = randomBytes(64 * 1024);
    const pump = () => {
      while (written < 100 * 1024 * 1024) {
        written += chunk.length;
        if (!socket.write(chunk)) {
          socket.once('drain', pump);
          return;
        }
      }
      socket.end();
    };
    pump();
  });
  const tunnel = await tcpTunnel(port);
  // Warm up the path (code loaded, buffers allocated) before the baseline.
  const warm = await connect(tunnel.port, tunnel.host);
  const warmed = new Promise<void>((resolve) => warm.once('data', () => resolve()));
  await warmed;
  warm.destroy();
  await new Promise((resolve) => setTimeout(resolve, 300));
  written = 0;
  const pid = server.child.pid!;
  const before = rssOf(pid);
  const idle = await connect(tunnel.port, tunnel.host);
  idle.pause();
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const growth = rssOf(pid) - before;
  const stalledAt = written;
  idle.destroy();
  assert.ok(stalledAt < 100 * 1024 * 1024, `the local server wrote everything (${stalledAt} bytes): nothing held it back`);
  assert.ok(growth < 20 * 1024 * 1024, `burrow grew by ${(growth / 1048576).toFixed(1)} MB`);
});

test('an agent killed mid-transfer closes its public connections within 1 s', { timeout: 30_000 }, async () => {
  const port = await localServer((socket) => {
    const timer = setInterval(() => socket.write(randomBytes(16 * 1024)), 10);
    socket.once('close', () => clearInterval(timer));
  });
  const agent = await spawnAgent(server, token, [{ kind: 'tcp', forward: `tcp://127.0.0.1:${port}` }]);
  closers.push(() => agent.kill());
  const { host, port: publicPort } = hostPort(agent.urls[0]!);
  const sockets = await Promise.all([1, 2, 3].map(() => connect(publicPort, host)));
  await Promise.all(sockets.map((socket) => new Promise((resolve) => socket.once('data', resolve))));
  // Closed = burrow ended or reset the connection (these clients allow half-open: 'end' is it).
  const closed = sockets.map(
    (socket) =>
      new Promise<number>((resolve) => {
        socket.on('data', () => {});
        socket.once('error', () => resolve(Date.now()));
        socket.once('end', () => resolve(Date.now()));
        socket.once('close', () => resolve(Date.now()));
      }),
  );
  const killedAt = Date.now();
  await agent.kill();
  const times = await Promise.all(closed);
  for (const at of times) assert.ok(at - killedAt < 1_000, `closed ${at - killedAt} ms after the kill`);
});

test('PROXY protocol v1 and v2 headers carry the public client address to the local server', { timeout: 30_000 }, async () => {
  for (const version of ['1', '2'] as const) {
    let received!: (value: Buffer) => void;
    const got = new Promise<Buffer>((resolve) => (received = resolve));
    const port = await localServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.once('end', () => {
        received(Buffer.concat(chunks));
        socket.end();
      });
    });
    const tunnel = await tcpTunnel(port, (builder) => builder.proxyProto(version));
    const socket = await connect(tunnel.port, tunnel.host);
    const clientPort = socket.localPort;
    socket.end('payload');
    socket.resume();
    const bytes = await got;
    if (version === '1') {
      assert.equal(bytes.toString('latin1'), `PROXY TCP4 127.0.0.1 127.0.0.1 ${clientPort} ${tunnel.port}\r\npayload`);
    } else {
      assert.ok(bytes.subarray(0, 12).equals(Buffer.from('0d0a0d0a000d0a515549540a', 'hex')), 'v2 signature');
      assert.equal(bytes[12], 0x21);
      assert.equal(bytes[13], 0x11);
      const length = bytes.readUInt16BE(14);
      const addresses = bytes.subarray(16, 16 + length);
      assert.deepEqual([...addresses.subarray(0, 8)], [127, 0, 0, 1, 127, 0, 0, 1]);
      assert.equal(addresses.readUInt16BE(8), clientPort);
      assert.equal(addresses.readUInt16BE(10), tunnel.port);
      assert.equal(bytes.subarray(16 + length).toString(), 'payload');
    }
  }
});

test('a port in use by another program is refused at bind; a closed tunnel closes its port', { timeout: 30_000 }, async () => {
  // A port of the range that burrow does not serve right now, taken by another program.
  const squatter = net.createServer();
  let squatted = 0;
  for (let port = server.tcpPorts.last; port >= server.tcpPorts.first && squatted === 0; port--) {
    const ok = await new Promise<boolean>((resolve) => {
      squatter.once('error', () => resolve(false));
      squatter.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) squatted = port;
  }
  assert.ok(squatted > 0, 'no free port left in the range');
  closers.push(() => new Promise((resolve) => squatter.close(resolve)));
  const error = await session
    .tcpEndpoint()
    .remoteAddr(`127.0.0.1:${squatted}`)
    .listenAndForward('tcp://127.0.0.1:9')
    .then(
      () => undefined,
      (e: unknown) => e as Error,
    );
  assert.ok(error, 'the bind succeeded on a port another program holds');
  assert.match(error.message, /in use by another program/);
  assert.match(error.message, /ERR_NGROK_307/);

  const port = await localServer((socket) => socket.end());
  const tunnel = await tcpTunnel(port);
  await tunnel.listener.close();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await assert.rejects(connect(tunnel.port, tunnel.host), /ECONNREFUSED/);
});

test('a pool whose tunnels run different policies: each connection picks its tunnel, then runs that tunnel’s policy', { timeout: 30_000 }, async () => {
  const port = await localServer((socket) => socket.pipe(socket));
  const denyLoopback = JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { deny: ['127.0.0.0/8'] } }] }] });
  const open = await tcpTunnel(port, (builder) => builder.poolingEnabled(true));
  const other = await connectAgent(server, token);
  closers.push(() => other.close().catch(() => {}));
  const denying = await other.tcpEndpoint().remoteAddr(`${open.host}:${open.port}`).poolingEnabled(true).trafficPolicy(denyLoopback).listenAndForward(`tcp://127.0.0.1:${port}`);
  closers.push(() => denying.close().catch(() => {}));
  // echoed, or closed before any byte came back (the denying tunnel's policy)
  const attempt = async (): Promise<'echoed' | 'refused'> => {
    const socket = await connect(open.port, open.host);
    return new Promise((resolve) => {
      socket.once('data', () => {
        socket.destroy();
        resolve('echoed');
      });
      // closed by burrow: a FIN (the socket is half-open here, allowHalfOpen) or a reset
      socket.once('end', () => {
        socket.destroy();
        resolve('refused');
      });
      socket.once('close', () => resolve('refused'));
      socket.on('error', () => {});
      socket.write('ping');
    });
  };
  const outcomes: string[] = [];
  for (let i = 0; i < 6; i++) outcomes.push(await attempt());
  assert.deepEqual([...outcomes].sort(), ['echoed', 'echoed', 'echoed', 'refused', 'refused', 'refused'], outcomes.join(' '));
  for (let i = 1; i < outcomes.length; i++) assert.notEqual(outcomes[i], outcomes[i - 1], `round-robin over the two tunnels: ${outcomes.join(' ')}`);
  const denied = () => server.logs().filter((entry) => entry.event === 'public_connection' && entry.proto === 'tcp' && entry.verdict === 'denied' && entry.denied_by !== undefined);
  for (let i = 0; i < 100 && denied().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(denied().length, 3, 'the refusals are the policy’s');
});

describe('graceful shutdown of the data plane', () => {
  function echoOnce(socket: net.Socket, text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      let got = '';
      const onData = (chunk: Buffer) => {
        got += chunk.toString();
        if (got.length >= text.length) {
          clearTimeout(timer);
          socket.off('data', onData);
          socket.off('close', onClose);
          resolve(got);
        }
      };
      const onClose = () => reject(new Error(`closed before the echo of "${text}" (got "${got}")`));
      const timer = setTimeout(() => reject(new Error(`no echo of "${text}" within 3 s (got "${got}")`)), 3_000);
      socket.on('data', onData);
      socket.once('close', onClose);
      socket.once('close', () => clearTimeout(timer));
      socket.write(text);
    });
  }

  test('SIGTERM: a connection in flight keeps working within the grace period; new ones are refused; the session then gets GOAWAY', async () => {
    const own = await startDataPlane({ tcpPortCount: 2, env: { SHUTDOWN_GRACE_MS: '8000' } });
    const ownSession = await connectAgent(own, await createToken(own));
    const localPort = await localServer((socket) => socket.pipe(socket));
    const listener = await ownSession.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${localPort}`);
    const { host, port } = hostPort(listener.url()!);
    const client = await connect(port, host);
    client.on('error', () => {});
    assert.equal(await echoOnce(client, 'before'), 'before');

    const stopping = Date.now();
    const exited = own.stop('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(await echoOnce(client, 'during the grace period'), 'during the grace period');
    await assert.rejects(connect(port, host), 'the public port stopped accepting');

    client.end();
    const exit = await exited;
    assert.equal(exit.code, 0);
    assert.ok(Date.now() - stopping < 6_000, 'the server leaves once the last connection is done, not at the end of the grace period');
    const ends = own.logs().filter((line) => line.event === 'session_end');
    assert.equal(ends.length, 1, 'the session ended with the shutdown');
    await ownSession.close().catch(() => {});
  });
});
