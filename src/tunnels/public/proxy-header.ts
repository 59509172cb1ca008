// PROXY_PROTOCOL_FROM (CLUSTER.md §1): a load balancer in front of the public listeners tells the
// client's address in a PROXY v1 or v2 header (haproxy's proxy-protocol.txt). Read only on
// connections from those addresses, where it is required; anyone else is the client itself.
import { BlockList, isIP, isIPv4, type Socket } from 'node:net';
import { canonicalIp } from '../tls/names.js';
import { plainIp, type Address } from './proxy-proto.js';

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** v1's longest line, CRLF included (the specification's 107). */
const V1_MAX_BYTES = 107;
/** v2: the 16-byte head and addresses with TLVs; a balancer's TLVs (unique id, TLS details) fit well under it. */
const V2_MAX_BYTES = 16 + 2048;
export const PROXY_HEADER_TIMEOUT_MS = 10_000;

export type ProxyHeaderParse =
  | { status: 'incomplete' }
  | { status: 'error'; reason: string }
  /** `source`/`destination` absent: UNKNOWN or LOCAL (a health check): the peer is the client. */
  | { status: 'done'; length: number; source?: Address; destination?: Address };

/** Parses the header at the start of `buf`: pure, judging each byte as it arrives. */
export function parseProxyHeader(buf: Buffer): ProxyHeaderParse {
  const v2Prefix = Math.min(buf.length, V2_SIGNATURE.length);
  if (buf.subarray(0, v2Prefix).equals(V2_SIGNATURE.subarray(0, v2Prefix)) && buf.length > 0 && buf[0] === 0x0d) return parseV2(buf);
  const v1Prefix = Math.min(buf.length, 6);
  if (buf.toString('latin1', 0, v1Prefix) !== 'PROXY '.slice(0, v1Prefix)) return { status: 'error', reason: 'no PROXY header' };
  return parseV1(buf);
}

function parseV1(buf: Buffer): ProxyHeaderParse {
  const end = buf.indexOf('\r\n', 0, 'latin1');
  if (end === -1) return buf.length >= V1_MAX_BYTES ? { status: 'error', reason: 'PROXY v1 line too long' } : { status: 'incomplete' };
  if (end + 2 > V1_MAX_BYTES) return { status: 'error', reason: 'PROXY v1 line too long' };
  const fields = buf.toString('latin1', 0, end).split(' ');
  const length = end + 2;
  if (fields[1] === 'UNKNOWN') return { status: 'done', length };
  const [, proto, src, dst, sport, dport] = fields;
  const family = proto === 'TCP4' ? 4 : proto === 'TCP6' ? 6 : 0;
  const source = family ? address(src, sport, family) : undefined;
  const destination = family ? address(dst, dport, family) : undefined;
  if (fields.length !== 6 || !source || !destination) return { status: 'error', reason: 'malformed PROXY v1 line' };
  return { status: 'done', length, source, destination };
}

function address(ip: string | undefined, port: string | undefined, family: 4 | 6): Address | undefined {
  const canonical = ip === undefined ? undefined : canonicalIp(ip);
  if (canonical === undefined || isIPv4(canonical) !== (family === 4) || !/^(0|[1-9]\d{0,4})$/.test(port ?? '') || Number(port) > 65535) return undefined;
  return { ip: canonical, port: Number(port) };
}

function parseV2(buf: Buffer): ProxyHeaderParse {
  if (buf.length < 16) return { status: 'incomplete' };
  const versionCommand = buf[12]!;
  if (versionCommand >> 4 !== 2 || (versionCommand & 0x0f) > 1) return { status: 'error', reason: 'unsupported PROXY v2 version or command' };
  const length = 16 + buf.readUInt16BE(14);
  if (length > V2_MAX_BYTES) return { status: 'error', reason: `PROXY v2 header longer than ${V2_MAX_BYTES} bytes` };
  if (buf.length < length) return { status: 'incomplete' };
  // LOCAL (a balancer's own health check), or a family other than TCP over IPv4/IPv6: the peer is the client.
  const family = buf[13]!;
  if ((versionCommand & 0x0f) === 0 || (family !== 0x11 && family !== 0x21)) return { status: 'done', length };
  const size = family === 0x11 ? 4 : 16;
  if (length < 16 + 2 * size + 4) return { status: 'error', reason: 'PROXY v2 addresses truncated' };
  const ip = (offset: number) => (size === 4 ? [...buf.subarray(offset, offset + 4)].join('.') : canonicalIp(groups(buf.subarray(offset, offset + 16)))!);
  const ports = 16 + 2 * size;
  return {
    status: 'done',
    length,
    source: { ip: ip(16), port: buf.readUInt16BE(ports) },
    destination: { ip: ip(16 + size), port: buf.readUInt16BE(ports + 2) },
  };
}

function groups(bytes: Buffer): string {
  const out: string[] = [];
  for (let i = 0; i < 16; i += 2) out.push(bytes.readUInt16BE(i).toString(16));
  return out.join(':');
}

/** Reads the header off `socket`; what follows it is put back, and the socket left paused. */
export function readProxyHeader(socket: Socket, timeoutMs = PROXY_HEADER_TIMEOUT_MS): Promise<ProxyHeaderParse> {
  return new Promise((resolve) => {
    let buffered: Buffer = Buffer.alloc(0);
    const finish = (result: ProxyHeaderParse) => {
      clearTimeout(timer);
      socket.pause();
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      if (result.status === 'done' && buffered.length > result.length) socket.unshift(buffered.subarray(result.length));
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const parsed = parseProxyHeader(buffered);
      if (parsed.status !== 'incomplete') finish(parsed);
    };
    const onEnd = () => finish({ status: 'error', reason: 'closed before the PROXY header was complete' });
    const timer = setTimeout(() => finish({ status: 'error', reason: `no PROXY header within ${timeoutMs} ms` }), timeoutMs);
    if (socket.destroyed || socket.readableEnded) return onEnd();
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.resume();
  });
}

/** The destination a PROXY header named (the balancer's address the client reached). */
const proxiedDestinations = new WeakMap<Socket, Address>();

export function proxiedDestinationOf(socket: Socket): Address | undefined {
  return proxiedDestinations.get(socket);
}

/**
 * Hands each accepted socket on, after reading its PROXY header when it comes from a trusted
 * address; then the socket's remoteAddress/remotePort are the client's, so everything that reads
 * them (log lines, X-Forwarded-For, policies, the agent's own PROXY header) sees the client.
 */
export class ProxyHeaderGate {
  private readonly trusted = new BlockList();

  constructor(
    cidrs: readonly string[],
    private readonly timeoutMs = PROXY_HEADER_TIMEOUT_MS,
  ) {
    for (const entry of cidrs) {
      const [ip, prefix] = entry.split('/') as [string, string | undefined];
      const type = isIPv4(ip) ? 'ipv4' : 'ipv6';
      if (prefix === undefined) this.trusted.addAddress(ip, type);
      else this.trusted.addSubnet(ip, Number(prefix), type);
    }
  }

  /** Calls `next` with the socket paused, or destroys it when a required header is missing or bad. */
  accept(socket: Socket, next: () => void): void {
    const peer = plainIp(socket.remoteAddress ?? '');
    // no address: the peer has gone already, and the listener sees a closed socket
    if (isIP(peer) === 0 || !this.trusted.check(peer, isIPv4(peer) ? 'ipv4' : 'ipv6')) return next();
    socket.on('error', () => {});
    void readProxyHeader(socket, this.timeoutMs).then((header) => {
      if (header.status !== 'done' || socket.destroyed) return void socket.destroy();
      if (header.source) {
        Object.defineProperties(socket, {
          remoteAddress: { value: header.source.ip, configurable: true },
          remotePort: { value: header.source.port, configurable: true },
          remoteFamily: { value: isIPv4(header.source.ip) ? 'IPv4' : 'IPv6', configurable: true },
        });
      }
      if (header.destination) proxiedDestinations.set(socket, header.destination);
      next();
    });
  }
}
