// PROXY protocol headers (haproxy's proxy-protocol.txt) written at the start of the bytes sent to
// an agent whose bind asked for them (ProxyProto 1 or 2): the agent re-emits them to its upstream.
import { isIPv4, isIPv6 } from 'node:net';

export interface Address {
  readonly ip: string;
  readonly port: number;
}

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** `::ffff:1.2.3.4` (a v4 client on a dual-stack socket) is the v4 address it carries. */
export function plainIp(ip: string): string {
  return ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}

/**
 * `ip:port`, with brackets around an IPv6 address. The ip is a socket's, so a colon marks IPv6:
 * isIPv6()'s regular expression, run on every IPv4 client, was 1 % of a short connection's CPU.
 */
export function formatAddress(address: Address): string {
  const ip = plainIp(address.ip);
  return ip.includes(':') ? `[${ip}]:${address.port}` : `${ip}:${address.port}`;
}

/** The header for a connection from `source` to `destination`; both of one family, else UNKNOWN / LOCAL-less UNSPEC. */
export function proxyProtocolHeader(version: 1 | 2, source: Address, destination: Address): Buffer {
  const src = plainIp(source.ip);
  let dst = plainIp(destination.ip);
  // A v4 client reached through a v6 listener address: name the listener by its v4 loopback/any.
  const family = isIPv4(src) ? 4 : isIPv6(src) ? 6 : 0;
  if (family === 4 && !isIPv4(dst)) dst = dst === '::' ? '0.0.0.0' : dst === '::1' ? '127.0.0.1' : dst;
  if (family === 6 && !isIPv6(dst)) dst = `::ffff:${dst}`;
  const known = family !== 0 && (family === 4 ? isIPv4(dst) : isIPv6(dst));
  return version === 1 ? v1(known ? family : 0, src, dst, source.port, destination.port) : v2(known ? family : 0, src, dst, source.port, destination.port);
}

function v1(family: number, src: string, dst: string, sport: number, dport: number): Buffer {
  if (family === 0) return Buffer.from('PROXY UNKNOWN\r\n', 'latin1');
  return Buffer.from(`PROXY TCP${family} ${src} ${dst} ${sport} ${dport}\r\n`, 'latin1');
}

function v2(family: number, src: string, dst: string, sport: number, dport: number): Buffer {
  // Version 2, command PROXY (0x21); family/transport: 0x11 TCP over IPv4, 0x21 TCP over IPv6, 0x00 UNSPEC.
  const addresses = family === 4 ? Buffer.concat([ipv4Bytes(src), ipv4Bytes(dst), ports(sport, dport)]) : family === 6 ? Buffer.concat([ipv6Bytes(src), ipv6Bytes(dst), ports(sport, dport)]) : Buffer.alloc(0);
  const head = Buffer.alloc(16);
  V2_SIGNATURE.copy(head, 0);
  head[12] = 0x21;
  head[13] = family === 4 ? 0x11 : family === 6 ? 0x21 : 0x00;
  head.writeUInt16BE(addresses.length, 14);
  return Buffer.concat([head, addresses]);
}

function ports(sport: number, dport: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt16BE(sport, 0);
  out.writeUInt16BE(dport, 2);
  return out;
}

function ipv4Bytes(ip: string): Buffer {
  return Buffer.from(ip.split('.').map(Number));
}

function ipv6Bytes(ip: string): Buffer {
  let text = ip;
  // An embedded v4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const out = Buffer.alloc(16);
  groups.forEach((group, i) => out.writeUInt16BE(parseInt(group || '0', 16), i * 2));
  return out;
}
