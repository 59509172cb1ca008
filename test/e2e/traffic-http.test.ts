import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import { connectAgent, createToken, freePort, spawnAgent, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/** HTTP and HTTPS endpoints: burrow's reverse proxy in front of the SDK and a local web server. */

let server: TrafficServer;
let token: string;
let session: ngrok.Session;
let local: http.Server;
let localConnections = 0;
let burrowCa: string;
const FIVE_MB = 5 * 1024 * 1024;

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath, 'utf8');
  token = await createToken(server);
  session = await connectAgent(server, token);
  local = http.createServer((req, res) => {
    if (req.url === '/echo-headers') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ headers: req.headers, port: req.socket.remotePort }));
    } else if (req.url === '/digest') {
      const hash = createHash('sha256');
      req.on('data', (chunk: Buffer) => hash.update(chunk));
      req.on('end', () => res.end(hash.digest('hex')));
    } else if (req.url === '/download') {
      // 5 MB streamed in 64 KiB pieces, no content-length: chunked through the proxy.
      let sent = 0;
      const chunk = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (sent < FIVE_MB) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    } else {
      res.end('hello');
    }
  });
  local.on('connection', () => localConnections++);
  // A minimal WebSocket echo: the handshake by hand, then one masked text frame back unmasked.
  local.on('upgrade', (req, socket: Duplex) => {
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nX-Seen-Proto: ${req.headers['x-forwarded-proto']}\r\n\r\n`);
    socket.on('data', (frame: Buffer) => {
      const length = frame[1]! & 0x7f;
      const mask = frame.subarray(2, 6);
      const payload = Buffer.from(frame.subarray(6, 6 + length).map((byte, i) => byte ^ mask[i % 4]!));
      socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  await session?.close().catch(() => {});
  local?.close();
  await cleanupProcesses();
});

const localUrl = () => `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  reused: boolean;
}

type Scheme = 'http' | 'https';

function request(scheme: Scheme, host: string, path: string, options: { method?: string; body?: Buffer; agent?: http.Agent | false; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const common = {
      host: '127.0.0.1',
      port: scheme === 'http' ? server.httpPort : server.tlsPort,
      path,
      method: options.method ?? 'GET',
      headers: { host: `${host}:${scheme === 'http' ? server.httpPort : server.tlsPort}`, ...options.headers },
      agent: options.agent ?? false,
      timeout: 20_000,
    };
    const req = scheme === 'http' ? http.request(common) : https.request({ ...common, servername: host, ca: burrowCa });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), reused: req.reusedSocket }));
      res.once('error', reject);
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    if (options.body) {
      // Streamed in pieces, without a content-length: chunked on the wire.
      let offset = 0;
      const pump = () => {
        while (offset < options.body!.length) {
          const piece = options.body!.subarray(offset, offset + 256 * 1024);
          offset += piece.length;
          if (!req.write(piece)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    } else req.end();
  });
}

async function bind(scheme: Scheme, domain: string, forward = localUrl(), configure?: (builder: ngrok.HttpListenerBuilder) => void, on = session): Promise<ngrok.Listener> {
  const builder = on.httpEndpoint().domain(domain);
  if (scheme === 'http') builder.scheme('HTTP');
  configure?.(builder);
  return builder.listenAndForward(forward);
}

for (const scheme of ['http', 'https'] as const) {
  describe(`${scheme} endpoints`, () => {
    const host = `web-${scheme}.burrow.localhost`;
    before(async () => {
      const listener = await bind(scheme, host);
      assert.equal(listener.url(), `${scheme}://${host}:${scheme === 'http' ? server.httpPort : server.tlsPort}`);
    });

    test('GET reaches the local server with X-Forwarded-For, -Proto and -Host', { timeout: 30_000 }, async () => {
      const answer = await request(scheme, host, '/echo-headers', { headers: { 'x-forwarded-for': '203.0.113.9' } });
      assert.equal(answer.status, 200);
      const seen = JSON.parse(answer.body.toString()) as { headers: Record<string, string> };
      assert.equal(seen.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1');
      assert.equal(seen.headers['x-forwarded-proto'], scheme);
      assert.equal(seen.headers['x-forwarded-host'], `${host}:${scheme === 'http' ? server.httpPort : server.tlsPort}`);
      assert.equal(seen.headers.host, `${host}:${scheme === 'http' ? server.httpPort : server.tlsPort}`);
    });

    test('a 5 MB body streams up (POST) and down (GET)', { timeout: 30_000 }, async () => {
      const body = randomBytes(FIVE_MB);
      const posted = await request(scheme, host, '/digest', { method: 'POST', body });
      assert.equal(posted.status, 200);
      assert.equal(posted.body.toString(), createHash('sha256').update(body).digest('hex'));
      const downloaded = await request(scheme, host, '/download');
      assert.equal(downloaded.status, 200);
      assert.equal(downloaded.body.length, FIVE_MB);
      assert.ok(downloaded.body.every((byte) => byte === 7));
    });

    test('keep-alive: one public connection serves several requests over one upstream connection', { timeout: 30_000 }, async () => {
      const agent = scheme === 'http' ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : new https.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const before = localConnections;
        const answers = [];
        for (let i = 0; i < 4; i++) answers.push(await request(scheme, host, '/echo-headers', { agent }));
        assert.deepEqual(answers.map((answer) => answer.reused), [false, true, true, true]);
        const ports = new Set(answers.map((answer) => (JSON.parse(answer.body.toString()) as { port: number }).port));
        assert.equal(ports.size, 1, 'the local server saw more than one connection');
        assert.equal(localConnections - before, 1);
      } finally {
        agent.destroy();
      }
    });

    test('Connection: close and HTTP/1.0: the answer is relayed and burrow closes the connection after it', { timeout: 30_000 }, async () => {
      const port = scheme === 'http' ? server.httpPort : server.tlsPort;
      const exchange = async (head: string, body = '', halfClose = false): Promise<string> => {
        const socket: net.Socket =
          scheme === 'http'
            ? (await import('node:net')).connect(port, '127.0.0.1')
            : tls.connect({ host: '127.0.0.1', port, servername: host, ca: burrowCa });
        if (halfClose) socket.end(head + body);
        else socket.write(head + body);
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        // No client-side close: burrow must end the connection once the answer is through.
        await new Promise((resolve, reject) => {
          socket.once('end', resolve);
          socket.once('error', reject);
        });
        socket.destroy();
        return Buffer.concat(chunks).toString();
      };
      const posted = await exchange(`POST /digest HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\nContent-Length: 11\r\n\r\n`, 'hello world');
      assert.match(posted, /^HTTP\/1\.1 200 OK\r\n/);
      assert.ok(posted.endsWith(createHash('sha256').update('hello world').digest('hex')), posted);
      for (const [version, connection] of [['1.1', 'Connection: close\r\n'], ['1.0', '']]) {
        const text = await exchange(`GET /echo-headers HTTP/${version}\r\nHost: ${host}\r\n${connection}X-Forwarded-For: 203.0.113.9\r\n\r\n`);
        assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, `HTTP/${version}`);
        const seen = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { headers: Record<string, string> };
        assert.equal(seen.headers.connection, 'close', 'the local server is asked to close too');
        assert.equal(seen.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1');
        assert.equal(seen.headers['x-forwarded-proto'], scheme);
        assert.equal(seen.headers['x-forwarded-host'], host);
      }
      // A client that half-closes once its request is out still gets the whole answer.
      for (const connection of ['Connection: close\r\n', '']) {
        const halfClosed = await exchange(`GET /echo-headers HTTP/1.1\r\nHost: ${host}\r\n${connection}\r\n`, '', true);
        assert.match(halfClosed, /^HTTP\/1\.1 200 OK\r\n/, connection);
        assert.match(halfClosed, /\r\n\r\n\{"headers":\{/, connection);
      }
      // A request pipelined behind one that closes the connection is not read: the first answer
      // arrives whole, with no 400 in front of it and nothing after it.
      const pipelined = await exchange(`GET /echo-headers HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\nGET /second HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      assert.match(pipelined, /^HTTP\/1\.1 200 OK\r\n/);
      assert.equal(pipelined.match(/HTTP\/1\.1 /g)?.length, 1, pipelined);
      assert.match(pipelined, /\r\n\r\n\{"headers":\{/);
      // Bytes that are no request still get Node's 400, and the connection closes.
      assert.equal(await exchange('NOT HTTP\r\n\r\n'), 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    });

    test('a WebSocket upgrade is passed through', { timeout: 30_000 }, async () => {
      const port = scheme === 'http' ? server.httpPort : server.tlsPort;
      const socket: net.Socket =
        scheme === 'http'
          ? (await import('node:net')).connect(port, '127.0.0.1')
          : tls.connect({ host: '127.0.0.1', port, servername: host, ca: burrowCa });
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      let received = Buffer.alloc(0);
      const headEnd = await new Promise<number>((resolve, reject) => {
        socket.on('data', (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          const end = received.indexOf('\r\n\r\n');
          if (end !== -1) resolve(end + 4);
        });
        socket.once('error', reject);
      });
      const head = received.subarray(0, headEnd).toString();
      assert.match(head, /^HTTP\/1\.1 101 /);
      assert.match(head, /Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/);
      assert.match(head, new RegExp(`X-Seen-Proto: ${scheme}`));
      received = received.subarray(headEnd);
      const payload = Buffer.from('hello over websocket');
      const mask = randomBytes(4);
      socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!))]));
      while (received.length < 2 + payload.length) await new Promise((resolve) => socket.once('data', resolve));
      assert.equal(received[0], 0x81);
      assert.equal(received.subarray(2, 2 + payload.length).toString(), 'hello over websocket');
      socket.destroy();
    });

    test('an unknown host gets 404 naming ERR_NGROK_3200', { timeout: 30_000 }, async () => {
      const answer = await request(scheme, scheme === 'http' ? 'nobody.burrow.localhost' : host, '/', scheme === 'http' ? {} : { headers: { host: 'nobody.burrow.localhost' } });
      assert.equal(answer.status, 404);
      assert.match(answer.body.toString(), /The endpoint nobody\.burrow\.localhost is offline\./);
      assert.match(answer.body.toString(), /ERR_NGROK_3200/);
    });

    test('502 when the local server is down', { timeout: 30_000 }, async () => {
      const downHost = `down-${scheme}.burrow.localhost`;
      const listener = await bind(scheme, downHost, `http://127.0.0.1:${await freePort()}`);
      try {
        const answer = await request(scheme, downHost, '/');
        assert.equal(answer.status, 502);
      } finally {
        await listener.close();
      }
    });
  });
}

test('an https endpoint outside *.EDGE_DOMAIN is served with a certificate issued for its name', { timeout: 30_000 }, async () => {
  const listener = await bind('https', 'app.example.com');
  try {
    const answer = await request('https', 'app.example.com', '/');
    assert.equal(answer.status, 200);
    assert.equal(answer.body.toString(), 'hello');
  } finally {
    await listener.close();
  }
});

test('pooling: two sessions binding one hostname both receive connections', { timeout: 30_000 }, async () => {
  const named = (name: string) =>
    new Promise<http.Server>((resolve) => {
      const s = http.createServer((_req, res) => res.end(name));
      s.listen(0, '127.0.0.1', () => resolve(s));
    });
  const [a, b] = await Promise.all([named('a'), named('b')]);
  const other = await connectAgent(server, token);
  try {
    const host = 'pool.burrow.localhost';
    const url = (s: http.Server) => `http://127.0.0.1:${(s.address() as net.AddressInfo).port}`;
    await bind('https', host, url(a), (builder) => builder.poolingEnabled(true));
    await bind('https', host, url(b), (builder) => builder.poolingEnabled(true), other);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add((await request('https', host, '/')).body.toString());
    assert.deepEqual([...seen].sort(), ['a', 'b']);
  } finally {
    await other.close();
    a.close();
    b.close();
  }
});

for (const scheme of ['http', 'https'] as const) {
  test(`pooling, ${scheme}: each request picks its tunnel, then runs that tunnel’s policy (its request and response phases)`, { timeout: 30_000 }, async () => {
    const respond = (body: string) => JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 200, body } }] }] });
    const mark = (name: string) => JSON.stringify({ on_http_response: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-policy': name } } }] }] });
    const named = (name: string) =>
      new Promise<http.Server>((resolve) => {
        const s = http.createServer((_req, res) => res.end(name));
        s.listen(0, '127.0.0.1', () => resolve(s));
      });
    const [a, b] = await Promise.all([named('a'), named('b')]);
    const url = (s: http.Server) => `http://127.0.0.1:${(s.address() as net.AddressInfo).port}`;
    const other = await connectAgent(server, token);
    const listeners: ngrok.Listener[] = [];
    const keepAlive = scheme === 'http' ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : new https.Agent({ keepAlive: true, maxSockets: 1, ca: burrowCa });
    const alternate = (bodies: string[]) => {
      for (let i = 1; i < bodies.length; i++) assert.notEqual(bodies[i], bodies[i - 1], `round-robin over the two tunnels: ${bodies.join(' ')}`);
    };
    try {
      // two policies answering at the edge: fresh connections, then one kept-alive connection, see both
      const answered = `answers-${scheme}.burrow.localhost`;
      listeners.push(await bind(scheme, answered, url(a), (builder) => builder.poolingEnabled(true).trafficPolicy(respond('A'))));
      listeners.push(await bind(scheme, answered, url(b), (builder) => builder.poolingEnabled(true).trafficPolicy(respond('B')), other));
      const fresh: string[] = [];
      for (let i = 0; i < 4; i++) fresh.push((await request(scheme, answered, '/')).body.toString());
      assert.deepEqual([...new Set(fresh)].sort(), ['A', 'B']);
      alternate(fresh);
      const kept: Answer[] = [];
      for (let i = 0; i < 4; i++) kept.push(await request(scheme, answered, '/', { agent: keepAlive }));
      assert.deepEqual(kept.map((answer) => answer.reused), [false, true, true, true], 'one connection');
      assert.deepEqual([...new Set(kept.map((answer) => answer.body.toString()))].sort(), ['A', 'B']);
      alternate(kept.map((answer) => answer.body.toString()));

      // requests forwarded: each goes to the tunnel whose policy ran, and its response phase marks the answer
      const forwarded = `marks-${scheme}.burrow.localhost`;
      listeners.push(await bind(scheme, forwarded, url(a), (builder) => builder.poolingEnabled(true).trafficPolicy(mark('A'))));
      listeners.push(await bind(scheme, forwarded, url(b), (builder) => builder.poolingEnabled(true).trafficPolicy(mark('B')), other));
      const marked: Answer[] = [];
      for (let i = 0; i < 4; i++) marked.push(await request(scheme, forwarded, '/', { agent: keepAlive }));
      for (const answer of marked) assert.equal(answer.headers['x-policy'], answer.body.toString().toUpperCase(), 'the answering tunnel’s own policy');
      assert.deepEqual([...new Set(marked.map((answer) => answer.body.toString()))].sort(), ['a', 'b']);

      // on_tcp_connect differs: each connection keeps the tunnel picked first, for all its requests
      const pinned = `pinned-${scheme}.burrow.localhost`;
      const loopbackOnly = (body: string) => JSON.stringify({ ...JSON.parse(respond(body)), on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { allow: ['127.0.0.0/8'] } }] }] });
      listeners.push(await bind(scheme, pinned, url(a), (builder) => builder.poolingEnabled(true).trafficPolicy(loopbackOnly('A'))));
      listeners.push(await bind(scheme, pinned, url(b), (builder) => builder.poolingEnabled(true).trafficPolicy(respond('B')), other));
      const perConnection: string[] = [];
      for (let i = 0; i < 4; i++) perConnection.push((await request(scheme, pinned, '/')).body.toString());
      assert.deepEqual([...new Set(perConnection)].sort(), ['A', 'B']);
      alternate(perConnection);
      const sticky = scheme === 'http' ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : new https.Agent({ keepAlive: true, maxSockets: 1, ca: burrowCa });
      try {
        const onOne: Answer[] = [];
        for (let i = 0; i < 4; i++) onOne.push(await request(scheme, pinned, '/', { agent: sticky }));
        assert.deepEqual(onOne.map((answer) => answer.reused), [false, true, true, true], 'one connection');
        assert.equal(new Set(onOne.map((answer) => answer.body.toString())).size, 1, 'one tunnel per connection');
      } finally {
        sticky.destroy();
      }
    } finally {
      keepAlive.destroy();
      for (const listener of listeners) await listener.close().catch(() => {});
      await other.close();
      a.close();
      b.close();
    }
  });
}

test('one log line per public connection, with its requests and bytes', { timeout: 30_000 }, async () => {
  await new Promise((resolve) => setTimeout(resolve, 200));
  const lines = server.logs().filter((entry) => entry.event === 'public_connection' && entry.verdict === 'allowed');
  for (const proto of ['http', 'https']) {
    const line = lines.find((entry) => entry.proto === proto);
    assert.ok(line, `no ${proto} line`);
    assert.match(String(line.endpoint_id), /^ep_/);
    assert.equal(typeof line.requests, 'number');
    assert.ok((line.bytes_in as number) > 0 && (line.bytes_out as number) > 0, JSON.stringify(line));
  }
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  assert.match(metrics, /burrow_public_connections_total\{proto="https",verdict="allowed"\} [1-9]/);
});

test('an idle keep-alive connection stays when the local service closes its side, and is closed when the agent goes away', { timeout: 30_000 }, async () => {
  // The local service drops idle connections after 200 ms: the agent FINs the proxy stream.
  const quick = http.createServer((req, res) => res.end('ok'));
  quick.keepAliveTimeout = 200;
  await new Promise<void>((resolve) => quick.listen(0, '127.0.0.1', resolve));
  const agent = await spawnAgent(server, token, [{ kind: 'http', forward: `http://127.0.0.1:${(quick.address() as net.AddressInfo).port}` }]);
  try {
    const host = new URL(agent.urls[0]!).host;
    const client = net.connect(server.httpPort, '127.0.0.1');
    client.on('error', () => {});
    let received = '';
    client.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));
    const get = async () => {
      const before = received.length;
      client.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      for (let i = 0; i < 200 && !received.slice(before).endsWith('ok'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.match(received.slice(before), /^HTTP\/1\.1 200 OK[\s\S]*ok$/);
    };
    await get();
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.ok(!client.destroyed, 'the local service closing its idle connection is not a reason to close the public one');
    await get();
    const killedAt = Date.now();
    await agent.kill();
    const at = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(Number.NaN), 5_000))]);
    assert.ok(at - killedAt < 1_000, `the idle connection was closed ${at - killedAt} ms after the agent was killed`);
  } finally {
    await agent.kill();
    await new Promise((resolve) => quick.close(resolve));
  }
});
