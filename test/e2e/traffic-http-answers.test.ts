// @test-pass sqlite
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * Answers of every shape on kept-alive public connections (burrow reads them with Node's parser
 * and frames them anew for the client): no body (HEAD, 204, 304), chunked, delimited by the local
 * server's close, `Connection: close`, many headers, chunked and empty request bodies, broken and
 * cut answers. Each is followed by another request on the same public connection.
 */

let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
let raw: net.Server;
const NODE_HOST = 'answers.burrow.localhost';
let slowAnswered = 0;
const RAW_HOST = 'raw-answers.burrow.localhost';

// Store-independent (HTTP framing on the public port; the store only records the bind, as in every suite of both
// passes): on the SQLite pass only.
before(async () => {
  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  local = http.createServer((req, res) => {
    const body: Buffer[] = [];
    req.on('data', (chunk: Buffer) => body.push(chunk));
    req.on('end', () => {
      if (req.url === '/slow') setTimeout(() => res.end(`slow ${++slowAnswered}`), 20);
      else if (req.url === '/hello') res.writeHead(200, { 'content-length': 11 }).end('hello world');
      else if (req.url === '/no-content') res.writeHead(204).end();
      else if (req.url === '/not-modified') res.writeHead(304, { etag: '"v1"' }).end();
      else if (req.url === '/chunked') {
        res.write('first,');
        setTimeout(() => res.end('second'), 20);
      } else if (req.url === '/trailers') {
        res.writeHead(200, { 'transfer-encoding': 'chunked', trailer: 'x-checksum' });
        res.write('with trailers');
        res.addTrailers({ 'x-checksum': 'abc' });
        res.end();
      } else if (req.url === '/many-headers') {
        for (let i = 0; i < 40; i++) res.setHeader(`x-header-${i}`, String(i));
        res.end('many');
      } else if (req.url === '/echo') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ body: Buffer.concat(body).toString(), contentLength: req.headers['content-length'] ?? null, transferEncoding: req.headers['transfer-encoding'] ?? null }));
      } else res.end(`at ${req.url}`);
    });
  });
  // a local server that writes answers by hand: ones Node's server never writes
  raw = net.createServer((socket) => {
    let pending = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      let end: number;
      while ((end = pending.indexOf('\r\n\r\n')) !== -1) {
        const path = pending.slice(0, end).split(' ')[1] ?? '';
        pending = pending.slice(end + 4);
        if (path === '/until-close') socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the close');
        else if (path === '/connection-close') socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
        else if (path === '/garbage') socket.write('NOT HTTP AT ALL\r\n\r\n');
        else if (path === '/hints-flood') {
          socket.write('HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n'.repeat(1000));
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfinal');
        }
        else if (path === '/split-head') {
          // the head's blank line split over two reads, the body holding another blank line
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r');
          setTimeout(() => socket.write('\nbody\r\n\r\nxx'), 30);
        } else if (path === '/split-body') {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nfirst ');
          setTimeout(() => socket.write('second'), 30);
        }
        else if (path === '/cut') {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n0123456789');
          setTimeout(() => socket.destroy(), 20);
        } else socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${path.length}\r\n\r\n${path}`);
      }
    });
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const forward = (listener: net.Server) => `http://127.0.0.1:${(listener.address() as net.AddressInfo).port}`;
  await session.httpEndpoint().scheme('HTTP').domain(NODE_HOST).listenAndForward(forward(local));
  await session.httpEndpoint().scheme('HTTP').domain(RAW_HOST).listenAndForward(forward(raw));
});

after(async () => {
  await session?.close().catch(() => {});
  local?.close();
  raw?.close();
  await cleanupProcesses();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  reused: boolean;
}

/** Writes `text` on a new connection to the HTTP port; what comes back until burrow closes it, `done` says so, or 10 s pass. */
function rawExchange(text: string, done: (got: string) => boolean = () => false): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(server.httpPort, '127.0.0.1');
    let got = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (done(got)) socket.end();
    });
    socket.once('close', () => resolve(got));
    socket.setTimeout(10_000, () => socket.destroy());
    socket.write(text);
  });
}

/** Runs `exchanges` with an agent that keeps one connection to the HTTP port. */
async function onOneConnection(exchanges: (agent: http.Agent) => Promise<void>): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await exchanges(agent);
  } finally {
    agent.destroy();
  }
}

/** One request through the HTTP port on `agent`'s one kept-alive connection. */
function request(agent: http.Agent, host: string, method: string, path: string, options: { body?: string[]; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, method, path, agent, headers: { host, ...options.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), reused: req.reusedSocket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    for (const piece of options.body ?? []) req.write(piece);
    req.end();
  });
}

test('answers without a body, chunked, with many headers, and request bodies chunked or empty: all on one kept-alive connection', { timeout: 30_000 }, async () => {
  await onOneConnection(async (agent) => {
    const head = await request(agent, NODE_HOST, 'HEAD', '/hello');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], '11', 'HEAD keeps the length of the answer GET would get');
    assert.equal(head.body, '');
    const noContent = await request(agent, NODE_HOST, 'GET', '/no-content');
    assert.equal(noContent.status, 204);
    const notModified = await request(agent, NODE_HOST, 'GET', '/not-modified');
    assert.deepEqual([notModified.status, notModified.headers.etag, notModified.body], [304, '"v1"', '']);
    const chunked = await request(agent, NODE_HOST, 'GET', '/chunked');
    assert.deepEqual([chunked.status, chunked.body], [200, 'first,second']);
    const trailers = await request(agent, NODE_HOST, 'GET', '/trailers');
    assert.equal(trailers.body, 'with trailers');
    const many = await request(agent, NODE_HOST, 'GET', '/many-headers');
    for (let i = 0; i < 40; i++) assert.equal(many.headers[`x-header-${i}`], String(i));
    assert.equal(many.headers['x-checksum'], undefined, "the previous answer's trailer is not this answer's header");
    assert.equal(many.body, 'many');
    const chunkedUp = await request(agent, NODE_HOST, 'POST', '/echo', { body: ['one,', 'two,', 'three'], headers: { 'transfer-encoding': 'chunked' } });
    assert.deepEqual(JSON.parse(chunkedUp.body), { body: 'one,two,three', contentLength: null, transferEncoding: 'chunked' });
    const empty = await request(agent, NODE_HOST, 'POST', '/echo');
    assert.deepEqual(JSON.parse(empty.body), { body: '', contentLength: '0', transferEncoding: null }, 'a bodiless POST says Content-Length: 0, as node:http does');
    const last = await request(agent, NODE_HOST, 'GET', '/hello');
    assert.equal(last.body, 'hello world');
    assert.deepEqual([head, noContent, notModified, chunked, trailers, many, chunkedUp, empty, last].map((answer) => answer.reused), [false, true, true, true, true, true, true, true, true]);
  });
});

test('an answer ended by the local server closing, or saying Connection: close, reaches the client, whose connection serves the next request', { timeout: 30_000 }, async () => {
  await onOneConnection(async (agent) => {
    const untilClose = await request(agent, RAW_HOST, 'GET', '/until-close');
    assert.deepEqual([untilClose.status, untilClose.body], [200, 'until the close']);
    const next = await request(agent, RAW_HOST, 'GET', '/after-close');
    assert.deepEqual([next.status, next.body, next.reused], [200, '/after-close', true]);
    const closing = await request(agent, RAW_HOST, 'GET', '/connection-close');
    assert.deepEqual([closing.status, closing.body, closing.headers.connection], [200, 'ok', 'keep-alive'], "the local server's Connection is its own, not the client's");
    const again = await request(agent, RAW_HOST, 'GET', '/again');
    assert.deepEqual([again.status, again.body, again.reused], [200, '/again', true]);
  });
});

test('answers whose head or body arrive in pieces reach the client whole, on one kept-alive connection', { timeout: 30_000 }, async () => {
  await onOneConnection(async (agent) => {
    const splitHead = await request(agent, RAW_HOST, 'GET', '/split-head');
    assert.deepEqual([splitHead.status, splitHead.body], [200, 'body\r\n\r\nxx']);
    const splitBody = await request(agent, RAW_HOST, 'GET', '/split-body');
    assert.deepEqual([splitBody.status, splitBody.body, splitBody.reused], [200, 'first second', true]);
    const next = await request(agent, RAW_HOST, 'GET', '/next');
    assert.deepEqual([next.status, next.body, next.reused], [200, '/next', true]);
  });
});

test('an answer that is no HTTP gets 502 and the connection serves the next request; one cut short closes the connection', { timeout: 30_000 }, async () => {
  await onOneConnection(async (agent) => {
    const garbage = await request(agent, RAW_HOST, 'GET', '/garbage');
    assert.equal(garbage.status, 502);
    assert.match(garbage.body, /answered with something that is not a valid HTTP answer/);
    const next = await request(agent, RAW_HOST, 'GET', '/after-garbage');
    assert.deepEqual([next.status, next.body, next.reused], [200, '/after-garbage', true]);
    await assert.rejects(request(agent, RAW_HOST, 'GET', '/cut'), /aborted|socket hang up|ECONNRESET/);
  });
});

test('three pipelined requests get their answers in order, a chunked one among them', { timeout: 30_000 }, async () => {
  const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: ${NODE_HOST}\r\n\r\n`;
  const text = await rawExchange(get('/first') + get('/chunked') + get('/third'), (got) => got.includes('at /third'));
  const bodies = [...text.matchAll(/at \/(?:first|third)|first,|second/g)].map((match) => match[0]);
  assert.deepEqual(bodies, ['at /first', 'first,', 'second', 'at /third'], text);
});

test('a client pipelining far more requests than are answered gets the answers owed, then 503 and the close, not a queue without bound', { timeout: 30_000 }, async () => {
  const before = slowAnswered;
  const started = Date.now();
  const text = await rawExchange(`GET /slow HTTP/1.1\r\nHost: ${NODE_HOST}\r\n\r\n`.repeat(500));
  assert.ok(Date.now() - started < 8_000, 'closed after the answers owed, not after answering everything');
  // one in flight and 64 waiting are answered, the next is refused and the connection closes
  assert.equal((text.match(/HTTP\/1\.1 200/g) ?? []).length, 65);
  assert.match(text, /HTTP\/1\.1 503 Service Unavailable\r\n[^]*Too many pipelined requests: at most 64 wait/);
  assert.equal(slowAnswered - before, 65, `the local server got ${slowAnswered - before} of the 500`);
});

test('1xx answers without end: the first eight reach the client, the rest are dropped, the final answer follows', { timeout: 30_000 }, async () => {
  const text = await rawExchange(`GET /hints-flood HTTP/1.1\r\nHost: ${RAW_HOST}\r\n\r\n`, (got) => got.endsWith('final'));
  assert.equal((text.match(/HTTP\/1\.1 103 /g) ?? []).length, 8, text.slice(0, 300));
  assert.match(text, /HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nfinal$/);
});
