import net from 'node:net';

/** Connects from `localAddress` to 127.0.0.1:`port`, writes `bytes`, and resolves with everything answered until the close. */
export function exchange(port: number, bytes: Buffer, localAddress = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('error', reject);
  });
}
