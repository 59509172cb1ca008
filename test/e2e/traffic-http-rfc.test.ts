// @test-pass sqlite
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * HTTP details of the public HTTP port that RFC 9110/9112 decide (TUNNELS.md §4 is silent):
 * pipelined answers in order, one Host line, absolute-form targets, CONNECT, 1xx, early answers.
 * Raw sockets, the real SDK as the agent, a local server that records what reaches it.
 */

let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
const seen: { url: string; host: string | undefined }[] = [];

// Store-independent (HTTP framing on the public port; the store only records the bind, as in every suite of both
// passes): on the SQLite pass only.
before(async () => {
  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  local = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', host: req.headers.host });
    if (req.url === '/slow') setTimeout(() => res.end('slow'), 300);
    else if (req.url === '/hints') {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      setTimeout(() => res.end('hinted'), 50);
    } else if (req.url === '/early') {
      // answers without reading the body (a refusal, say)
      res.writeHead(413, { 'content-length': 4 });
      res.end('nope');
    } else res.end(`at ${req.url}`);
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  const forward = `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;
  for (const name of ['rfc.burrow.localhost', 'other.burrow.localhost']) await session.httpEndpoint().scheme('HTTP').domain(name).listenAndForward(forward);
});

after(async () => {
  await session?.close().catch(() => {});
  local?.close();
  await cleanupProcesses();
});

/** Writes `text` on a new connection to the HTTP port; resolves with everything read until burrow closes it (or `waitMs`). */
function exchange(text: string | Buffer, waitMs = 5_000, keepWriting?: (socket: net.Socket) => void): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(server.httpPort, '127.0.0.1');
    let got = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
    socket.once('close', () => resolve(got));
    socket.setTimeout(waitMs, () => socket.destroy());
    socket.write(text);
    keepWriting?.(socket);
  });
}

const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));

test('pipelined, a keep-alive request and a closing one: both answers, in order, even when the first is slower', { timeout: 30_000 }, async () => {
  const text = await exchange('GET /slow HTTP/1.1\r\nHost: rfc.burrow.localhost\r\n\r\nGET /second HTTP/1.1\r\nHost: rfc.burrow.localhost\r\nConnection: close\r\n\r\n');
  assert.deepEqual(statuses(text), [200, 200], text);
  assert.ok(text.indexOf('slow') < text.indexOf('at /second'), text);
});

test('two Host lines are refused with 400, and nothing reaches the local server', { timeout: 30_000 }, async () => {
  const before = seen.length;
  const text = await exchange('GET /two HTTP/1.1\r\nHost: rfc.burrow.localhost\r\nHost: other.burrow.localhost\r\n\r\n');
  assert.deepEqual(statuses(text), [400], text);
  assert.equal(seen.length, before);
});

test("an absolute-form target is routed by its own host, not the Host header's", { timeout: 30_000 }, async () => {
  const text = await exchange('GET http://other.burrow.localhost/abs HTTP/1.1\r\nHost: nowhere.burrow.localhost\r\nConnection: close\r\n\r\n');
  assert.deepEqual(statuses(text), [200], text);
  assert.match(text, /at http:\/\/other\.burrow\.localhost\/abs$/);
});

test('CONNECT is answered 405 and the connection closed, not dropped without a word', { timeout: 30_000 }, async () => {
  const text = await exchange('CONNECT rfc.burrow.localhost:80 HTTP/1.1\r\nHost: rfc.burrow.localhost:80\r\n\r\n');
  assert.deepEqual(statuses(text), [405], text);
});

test('a 103 Early Hints of the local server reaches the client before the answer, on a kept-alive connection', { timeout: 30_000 }, async () => {
  const text = await exchange('GET /hints HTTP/1.1\r\nHost: rfc.burrow.localhost\r\n\r\n', 1_500);
  assert.deepEqual(statuses(text), [103, 200], text);
  assert.match(text, /^HTTP\/1\.1 103 Early Hints\r\nlink: <\/style\.css>; rel=preload; as=style\r\n\r\n/i);
});

test('an answer that comes before the request body is read closes the connection after it (RFC 9112 §9.6)', { timeout: 30_000 }, async () => {
  const started = Date.now();
  const text = await exchange('POST /early HTTP/1.1\r\nHost: rfc.burrow.localhost\r\nContent-Length: 10000000\r\n\r\n', 8_000, (socket) => socket.write(Buffer.alloc(64 * 1024)));
  assert.deepEqual(statuses(text), [413], text);
  assert.match(text, /\r\nconnection: close\r\n/i);
  assert.ok(Date.now() - started < 5_000, 'closed at once, not left waiting for the rest of the body');
});
