// What one public client may hold of a TCP endpoint, and how long an idle connection is kept
// (issue 29 item 10: 500 idle connections from one address filled an agent's stream cap).
import type { PublicConnection } from './connections.js';

export interface TcpLimits {
  /** A connection with no byte either way for this long is closed; 0 = never (long-lived protocols). */
  readonly idleTimeoutMs: number;
  /**
   * Connections one client address (an IPv6 /64) may hold open to one busy endpoint; 0 = no
   * limit. An endpoint is busy from `busyAt` connections on: below, a client may take more.
   */
  readonly connectionsPerClient: number;
  readonly busyAt: number;
}

/** Open connections to one endpoint: in all, and by client. */
interface EndpointLoad {
  total: number;
  readonly byClient: Map<string, number>;
}

export class TcpConnectionLimits {
  /** By endpoint id; an entry (and a client's) is gone when its count falls to 0. */
  private readonly endpoints = new Map<string, EndpointLoad>();

  constructor(private readonly limits: TcpLimits) {}

  /**
   * Takes a place for the connection's client at `endpointId` until the connection closes, and
   * arms the idle timeout. False (outcome `client_limit`) when the endpoint is busy and the client
   * already holds its share: one client can neither fill an agent's streams nor starve the others.
   */
  admit(conn: PublicConnection, endpointId: string): boolean {
    const { socket } = conn;
    if (this.limits.connectionsPerClient > 0) {
      const client = clientKey(socket.remoteAddress ?? '');
      let load = this.endpoints.get(endpointId);
      const held = load?.byClient.get(client) ?? 0;
      if (load !== undefined && load.total >= this.limits.busyAt && held >= this.limits.connectionsPerClient) {
        conn.outcome = 'client_limit';
        return false;
      }
      if (load === undefined) this.endpoints.set(endpointId, (load = { total: 0, byClient: new Map() }));
      load.total++;
      load.byClient.set(client, held + 1);
      const counted = load;
      socket.once('close', () => this.release(endpointId, counted, client));
    }
    if (this.limits.idleTimeoutMs > 0) {
      socket.setTimeout(this.limits.idleTimeoutMs, () => {
        conn.outcome = 'idle_timeout';
        socket.destroy();
      });
    }
    return true;
  }

  private release(endpointId: string, load: EndpointLoad, client: string): void {
    const left = (load.byClient.get(client) ?? 1) - 1;
    if (left > 0) load.byClient.set(client, left);
    else load.byClient.delete(client);
    if (--load.total <= 0) this.endpoints.delete(endpointId);
  }
}

/**
 * Whose share a connection counts against: an IPv4 address (also when IPv4-mapped), or the /64
 * of an IPv6 one, since a single IPv6 client is usually given a whole /64.
 */
export function clientKey(ip: string): string {
  const address = ip.replace(/%.*$/, '');
  if (!address.includes(':')) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  const [head = '', tail] = address.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  // an embedded dotted IPv4 takes two groups
  const backGroups = back.length + (back.at(-1)?.includes('.') ? 1 : 0);
  const groups = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - backGroups)).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((group) => (parseInt(group, 16) || 0).toString(16))
    .join(':')}::/64`;
}
