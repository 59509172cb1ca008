// The address a public connection reached, without a getsockname() per connection when the
// listener is bound to one address: then every connection it accepts has that address and port.
import { isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import type { Address } from './proxy-proto.js';
import { proxiedDestinationOf } from './proxy-header.js';

/** A listener's own address when it is specific (not 0.0.0.0 or ::); null when it is a wildcard. */
const bound = new WeakMap<Server, Address | null>();

function specificAddressOf(server: Server): Address | null {
  let address = bound.get(server);
  if (address === undefined) {
    const listening = server.address();
    // before listen() completes there is nothing to remember yet
    if (listening === null || typeof listening !== 'object') return null;
    address = isSpecific(listening.address) ? { ip: listening.address, port: listening.port } : null;
    bound.set(server, address);
  }
  return address;
}

/** server.address() gives the wildcards as written here; '::' also takes IPv4 (dual stack). */
function isSpecific(ip: string): boolean {
  return (isIPv4(ip) && ip !== '0.0.0.0') || (isIPv6(ip) && ip !== '::');
}

/** Where `socket` (accepted by `server`) was connected to. */
export function serverEndOf(socket: Socket, server: Server | undefined): Address {
  const proxied = proxiedDestinationOf(socket);
  if (proxied) return proxied;
  const known = server ? specificAddressOf(server) : null;
  return known ?? { ip: socket.localAddress ?? '', port: socket.localPort ?? 0 };
}
