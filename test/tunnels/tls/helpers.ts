// Shared by the TLS tests: temporary directories and a real TLS handshake on loopback.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type ConnectionOptions } from 'node:tls';

export async function tempDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'burrow-tls-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export type HandshakeResult = { ok: true; echoed: string } | { ok: false; code: string; message: string };

/**
 * Serves `cert`/`key` on `host` and connects a TLS client with `client` options; resolves with
 * the outcome (after one echoed message when the handshake succeeds).
 */
export async function handshake(
  server: { cert: string; key: string },
  host: string,
  client: ConnectionOptions,
): Promise<HandshakeResult> {
  const srv = createServer({ cert: server.cert, key: server.key }, (socket) => {
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  srv.on('tlsClientError', () => {});
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, host, () => resolve());
  });
  const port = (srv.address() as AddressInfo).port;
  try {
    return await new Promise<HandshakeResult>((resolve) => {
      const socket = connect({ host, port, ...client }, () => {
        socket.write('ping');
        socket.once('data', (data) => {
          resolve({ ok: true, echoed: data.toString() });
          socket.end();
        });
      });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, code: String(err.code), message: err.message }));
    });
  } finally {
    await new Promise((resolve) => srv.close(resolve));
  }
}

/** True when this machine can listen on ::1. */
export async function ipv6Loopback(): Promise<boolean> {
  const srv = createNetServer();
  return new Promise((resolve) => {
    srv.once('error', () => resolve(false));
    srv.listen(0, '::1', () => srv.close(() => resolve(true)));
  });
}
