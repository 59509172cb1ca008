import net from 'node:net';

const PROBE_TIMEOUT_MS = 500;

/**
 * Whether something accepts a TCP connection at `host:port` within half a second: an instance
 * whose cluster address answers is alive, whatever its liveness row says (failover.ts). Nothing
 * is sent; the connection is closed at once.
 */
export function addressAnswers(address: string): Promise<boolean> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65_535) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (answers: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answers);
    };
    const timer = setTimeout(() => done(false), PROBE_TIMEOUT_MS);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
