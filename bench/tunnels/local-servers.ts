import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { CHUNK, MAX_HEADER_BYTES, parseHeader, SMALL_BODY, type Command } from './wire.js';

/**
 * The servers every path ends at, one per process (BENCH_SERVER): `tcp` (the bench protocol of
 * wire.ts: echo, source, sink), `tls` (the same behind TLS: the TLS edge and tls endpoint
 * scenarios; TLS_CERT/TLS_KEY), `http` (GET / answers SMALL_BODY, GET /64k 64 KiB, keep-alive).
 * Prints `listening <url>`; exits when stdin closes (the bench is gone).
 */
const BODY_64K = Buffer.alloc(64 * 1024, 'x');

function serveBench(socket: net.Socket): void {
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  let pending = Buffer.alloc(0);
  const onHeader = (data: Buffer) => {
    pending = Buffer.concat([pending, data]);
    const newline = pending.indexOf(10);
    if (newline < 0) {
      if (pending.length > MAX_HEADER_BYTES) socket.destroy();
      return;
    }
    socket.off('data', onHeader);
    const command = parseHeader(pending.subarray(0, newline).toString('latin1'));
    const rest = pending.subarray(newline + 1);
    if (!command) socket.destroy();
    else run(socket, command, rest);
  };
  socket.on('data', onHeader);
}

function run(socket: net.Socket, command: Command, rest: Buffer): void {
  if (command.kind === 'echo') {
    if (rest.length > 0) socket.write(rest);
    socket.pipe(socket);
    return;
  }
  if (command.kind === 'up') {
    let received = rest.length;
    const check = () => {
      if (received >= command.bytes) socket.end('ok\n');
    };
    socket.on('data', (data: Buffer) => {
      received += data.length;
      check();
    });
    check();
    return;
  }
  let left = command.bytes;
  const write = () => {
    while (left > 0) {
      const chunk = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
      left -= chunk.length;
      if (!socket.write(chunk)) return void socket.once('drain', write);
    }
    socket.end();
  };
  write();
}

function listening(scheme: string, server: net.Server): void {
  const { port } = server.address() as net.AddressInfo;
  process.stdout.write(`listening ${scheme}://127.0.0.1:${port}\n`);
}

const kind = process.env.BENCH_SERVER;
if (kind === 'tcp') {
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, serveBench);
  server.listen(0, '127.0.0.1', () => listening('tcp', server));
} else if (kind === 'tls') {
  const server = tls.createServer(
    { allowHalfOpen: true, cert: readFileSync(process.env.TLS_CERT!), key: readFileSync(process.env.TLS_KEY!) },
    serveBench,
  );
  server.on('tlsClientError', () => {});
  server.listen(0, '127.0.0.1', () => listening('tls', server));
} else if (kind === 'http') {
  const server = http.createServer({ keepAliveTimeout: 60_000, noDelay: true }, (req, res) => {
    const body = req.url === '/64k' ? BODY_64K : SMALL_BODY;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => listening('http', server));
} else {
  process.stderr.write(`BENCH_SERVER must be tcp, tls or http, not ${kind}\n`);
  process.exit(2);
}
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
