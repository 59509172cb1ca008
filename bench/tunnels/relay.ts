import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';

/**
 * The baselines a tunnel is measured against, one listener per process (RELAY_MODE):
 *   `tcp`      plain in, plain out (RELAY_TARGET): the least any proxy must do;
 *   `tls-in`   plain in, TLS out to the `tls-out` half (a new handshake per connection);
 *   `tls-out`  TLS in (TLS_CERT/TLS_KEY), plain out.
 * `tls-in` → `tls-out` is the TLS relay pair: the least a tunnel with an encrypted agent link does.
 * Half-closes pass through; either side failing closes the other. Prints `listening tcp://…`.
 */
const mode = process.env.RELAY_MODE;
const [host, port] = (process.env.RELAY_TARGET ?? '').split(':');
if (!host || !port || !['tcp', 'tls-in', 'tls-out'].includes(mode ?? '')) {
  process.stderr.write('RELAY_MODE (tcp, tls-in, tls-out) and RELAY_TARGET (host:port) are required\n');
  process.exit(2);
}

function splice(a: net.Socket, b: net.Socket): void {
  a.setNoDelay(true);
  b.setNoDelay(true);
  a.pipe(b);
  b.pipe(a);
  const close = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', close);
  b.on('error', close);
  a.on('close', () => b.destroySoon());
  b.on('close', () => a.destroySoon());
}

function connectOut(): net.Socket {
  if (mode === 'tls-in') {
    // The pair is one deployment: trust the other half's own certificate; no session resumption.
    return tls.connect({ host, port: Number(port), servername: 'relay.bench', ca: readFileSync(process.env.TLS_CERT!) });
  }
  return net.connect({ host, port: Number(port), allowHalfOpen: true });
}

const onConnection = (socket: net.Socket) => splice(socket, connectOut());
const server =
  mode === 'tls-out'
    ? tls.createServer({ allowHalfOpen: true, cert: readFileSync(process.env.TLS_CERT!), key: readFileSync(process.env.TLS_KEY!) }, onConnection)
    : net.createServer({ allowHalfOpen: true }, onConnection);
server.on('tlsClientError', () => {});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening tcp://127.0.0.1:${(server.address() as net.AddressInfo).port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
