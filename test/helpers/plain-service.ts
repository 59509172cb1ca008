import net from 'node:net';
import tls from 'node:tls';

/**
 * A local plain TCP service for the TLS-termination suites: greets each connection with
 * "plain\n", records the first bytes it read (plaintext, or a TLS record when TLS was passed
 * through), and echoes.
 */
export interface PlainService {
  port: number;
  firstBytes: Buffer[];
  close(): Promise<void>;
}

export async function startPlainService(): Promise<PlainService> {
  const firstBytes: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const local = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.once('data', (chunk: Buffer) => firstBytes.push(chunk));
    socket.write('plain\n');
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  return {
    port: (local.address() as net.AddressInfo).port,
    firstBytes,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => local.close(() => resolve()));
    },
  };
}

/** A TLS client of the TLS port: the service's greeting, then what it echoed of `message`. */
export function tlsExchange(
  port: number,
  servername: string,
  message: string,
  options: tls.ConnectionOptions,
): Promise<{ greeting: string; echoed: string; protocol: string | null }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, timeout: 5_000, ...options });
    let buffered = '';
    let greeting: string | undefined;
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      if (greeting === undefined && buffered.includes('\n')) {
        greeting = buffered.slice(0, buffered.indexOf('\n'));
        buffered = buffered.slice(greeting.length + 1);
        socket.write(message);
      }
      if (greeting !== undefined && buffered.length >= message.length) {
        resolve({ greeting, echoed: buffered, protocol: socket.getProtocol() });
        socket.destroy();
      }
    });
    socket.once('error', reject);
    socket.once('timeout', () => {
      socket.destroy();
      reject(new Error('timeout'));
    });
    socket.once('close', () => reject(new Error('closed before the echo')));
  });
}
