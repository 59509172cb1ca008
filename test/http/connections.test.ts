// What the reliability probe found on the wire, over real sockets: a 413 the client actually
// reads, Host headers held to RFC 9112, and a graceful shutdown that answers (never resets)
// the requests already queued on keep-alive connections.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let port: number;
before(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
after(() => t.close());

/** Sends raw bytes; resolves with everything read until the server closes, and any socket error. */
function exchange(write: (socket: Socket) => Promise<void> | void, timeoutMs = 10_000): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | undefined;
    const timer = setTimeout(() => socket.destroy(new Error('timeout')), timeoutMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (failure: NodeJS.ErrnoException) => (error ??= failure.code ?? failure.message));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), ...(error ? { error } : {}) });
    });
    socket.on('connect', () => {
      Promise.resolve(write(socket)).catch((failure: NodeJS.ErrnoException) => (error ??= failure.code ?? failure.message));
    });
  });
}

const head = (extra: string) =>
  `POST /credentials HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.admin.key}\r\nService-Version: 2\r\nContent-Type: application/json\r\n${extra}\r\n`;

describe('connections', () => {
  it('lets a client that sends a body over 1 MiB read its 413 (no EPIPE, no reset)', async () => {
    // The whole body in one write, as most clients send it before reading: 8 MiB, within what is
    // read and thrown away after a 413 (DISCARD_LIMIT_BYTES).
    const total = 8 * 1024 * 1024;
    const chunk = 64 * 1024;
    const chunkedBody = `${`${chunk.toString(16)}\r\n${' '.repeat(chunk)}\r\n`.repeat(total / chunk)}0\r\n\r\n`;
    for (let round = 1; round <= 3; round++) {
      for (const [framing, body] of [
        [`Content-Length: ${total}\r\n`, Buffer.alloc(total, 0x20)],
        ['Transfer-Encoding: chunked\r\n', Buffer.from(chunkedBody)],
      ] as const) {
        const result = await exchange((socket) => {
          socket.write(head(framing));
          socket.end(body);
        });
        const where = `${framing.trim()}, round ${round}`;
        assert.match(result.text, /^HTTP\/1\.1 413 /, `${where}: ${result.error ?? ''} ${result.text.slice(0, 80)}`);
        assert.match(result.text, /connection: close/i, where);
        assert.equal(result.error, undefined, `${where}: the client saw ${result.error}`);
      }
    }
  });

  it('refuses two Host headers and a port above 65535 with 400 (RFC 9112)', async () => {
    const get = (hosts: string) =>
      exchange((socket) => {
        socket.end(`GET /credentials HTTP/1.1\r\n${hosts}Authorization: Bearer ${t.admin.key}\r\nService-Version: 2\r\nConnection: close\r\n\r\n`);
      });
    assert.match((await get('Host: a.example\r\nHost: b.example\r\n')).text, /^HTTP\/1\.1 400 /);
    assert.match((await get('Host: a.example\r\nhost: a.example\r\n')).text, /^HTTP\/1\.1 400 /);
    assert.match((await get('Host: a.example:65536\r\n')).text, /^HTTP\/1\.1 400 /);
    assert.match((await get('Host: a.example:99999\r\n')).text, /^HTTP\/1\.1 400 /);
    assert.match((await get('Host: a.example:65535\r\n')).text, /^HTTP\/1\.1 200 /);
    assert.match((await get('Host: a.example\r\n')).text, /^HTTP\/1\.1 200 /);
  });
});

describe('graceful shutdown', () => {
  it('answers every request already queued on a keep-alive connection, the last with Connection: close, never a reset', async () => {
    const app = await createTestApp();
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    const appPort = (app.app.server.address() as { port: number }).port;
    const headers = `Host: 127.0.0.1\r\nAuthorization: Bearer ${app.admin.key}\r\nService-Version: 2\r\n`;
    const body = '{"description":"queued"}';
    const socket = connect(appPort, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (failure: NodeJS.ErrnoException) => (error ??= failure.code));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    // A first request in flight (its body not yet sent) when the shutdown begins …
    socket.write(`POST /credentials HTTP/1.1\r\n${headers}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    app.app.beginShutdown();
    const closing = app.app.close();
    // … then its body, with three more requests pipelined behind it.
    socket.write(
      body +
        `GET /credentials HTTP/1.1\r\n${headers}\r\n` +
        `POST /credentials HTTP/1.1\r\n${headers}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    );
    await closed;
    await closing;
    await app.store.close().catch(() => {});
    const text = Buffer.concat(chunks).toString('utf8');
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => match[1]);
    assert.equal(error, undefined, `the client saw ${error}; got:\n${text}`);
    assert.deepEqual(statuses, ['201', '200', '201', '200'], text);
    const closes = [...text.matchAll(/^connection: close\r$/gim)].length;
    assert.equal(closes, 1, 'only the last answer closes the connection');
    assert.match(text.slice(text.lastIndexOf('HTTP/1.1')), /connection: close/i);
  });

  it('a request arriving after the shutdown began is answered with Connection: close, and the connection ends', async () => {
    const app = await createTestApp();
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    const appPort = (app.app.server.address() as { port: number }).port;
    const socket = connect(appPort, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    app.app.beginShutdown();
    // readyz answers synchronously while closing; an authenticated request takes the long way
    socket.write(`GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write(`GET /credentials HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${app.admin.key}\r\nService-Version: 2\r\n\r\n`);
    await closed;
    await app.app.close();
    await app.store.close().catch(() => {});
    const text = Buffer.concat(chunks).toString('utf8');
    assert.match(text, /^HTTP\/1\.1 503 [^]*\r\nconnection: close\r\n[^]*"shutting down"/i);
    assert.equal([...text.matchAll(/HTTP\/1\.1 /g)].length, 1, 'the connection ends after that answer');
  });
});
