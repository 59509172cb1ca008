/**
 * IPv4/IPv6 addresses and CIDR ranges, parsed strictly (no leading zeros in IPv4 octets or
 * prefix lengths, no zones, no surrounding whitespace) so that what validates is unambiguous.
 * Used by restrict-ips validation and by the CEL functions inCidrRange/inCidrRanges.
 */

export interface IpAddress {
  version: 4 | 6;
  bytes: Uint8Array;
}

export interface Cidr {
  version: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

const DECIMAL_OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;
const PREFIX = /^(?:0|[1-9][0-9]{0,2})$/;

export function parseIPv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    if (!DECIMAL_OCTET.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes[i] = value;
  }
  return bytes;
}

export function parseIPv6(text: string): Uint8Array | null {
  if (text.length === 0 || text.length > 45) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const split = (half: string | undefined): string[] => (half ? half.split(':') : []);
  let head: number[] | null;
  let tail: number[] | null = [];
  if (halves.length === 1) {
    head = parseGroups(split(halves[0]), true);
    if (!head || head.length !== 8) return null;
  } else {
    // `::` stands for at least one zero group; an embedded IPv4 address may only end the address.
    head = parseGroups(split(halves[0]), false);
    tail = parseGroups(split(halves[1]), true);
    if (!head || !tail || head.length + tail.length > 7) return null;
  }
  const bytes = new Uint8Array(16);
  const write = (index: number, value: number): void => {
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  };
  head.forEach((value, i) => write(i, value));
  tail.forEach((value, i) => write(8 - tail.length + i, value));
  return bytes;
}

/** Hex groups as 16-bit numbers; a trailing dotted IPv4 part (when allowed) counts as two groups. */
function parseGroups(parts: string[], allowIPv4Last: boolean): number[] | null {
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (allowIPv4Last && i === parts.length - 1 && part.includes('.')) {
      const v4 = parseIPv4(part);
      if (!v4) return null;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else if (HEX_GROUP.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return null;
    }
  }
  return groups;
}

export function parseIp(text: string): IpAddress | null {
  if (typeof text !== 'string') return null;
  if (text.includes(':')) {
    const bytes = parseIPv6(text);
    return bytes ? { version: 6, bytes } : null;
  }
  const bytes = parseIPv4(text);
  return bytes ? { version: 4, bytes } : null;
}

export function parseCidr(text: string): Cidr | null {
  if (typeof text !== 'string') return null;
  const slash = text.indexOf('/');
  if (slash < 0 || slash !== text.lastIndexOf('/')) return null;
  const ip = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!ip || !PREFIX.test(prefixText)) return null;
  const prefix = Number(prefixText);
  if (prefix > (ip.version === 4 ? 32 : 128)) return null;
  return { version: ip.version, bytes: ip.bytes, prefix };
}

/** Why `text` is not a CIDR, as the end of a sentence ("… is not a valid CIDR: <reason>"). */
export function explainInvalidCidr(text: string): string {
  if (text.trim() !== text) return 'it has leading or trailing whitespace';
  const slash = text.indexOf('/');
  if (slash < 0) {
    return parseIp(text)
      ? 'it is a single address without a prefix length; add /32 for IPv4 or /128 for IPv6'
      : 'expected an address and a prefix length, such as 10.0.0.0/8 or 2001:db8::/32';
  }
  if (slash !== text.lastIndexOf('/')) return 'it contains more than one "/"';
  const ip = parseIp(text.slice(0, slash));
  if (!ip) return 'the part before "/" is not a valid IPv4 or IPv6 address';
  const max = ip.version === 4 ? 32 : 128;
  return `the prefix length must be a whole number from 0 to ${max} for an IPv${ip.version} address`;
}

function isV4Mapped(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/**
 * Whether `ip` lies in `cidr`. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, as dual-stack
 * sockets report IPv4 peers) also matches IPv4 ranges; a plain IPv4 address never matches an
 * IPv6 range.
 */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  let bytes = ip.bytes;
  if (cidr.version === 4 && ip.version === 6) {
    if (!isV4Mapped(bytes)) return false;
    bytes = bytes.subarray(12);
  } else if (cidr.version !== ip.version) {
    return false;
  }
  const whole = cidr.prefix >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole]! ^ cidr.bytes[whole]!) & mask) === 0;
}

/** CEL inCidrRange(ip, cidr): false for an invalid address or CIDR, never an error. */
export function inCidrRange(ip: unknown, cidr: unknown): boolean {
  if (typeof ip !== 'string' || typeof cidr !== 'string') return false;
  const address = parseIp(ip);
  const range = address && parseCidr(cidr);
  return address !== null && range !== null && cidrContains(range, address);
}

/** CEL inCidrRanges(ip, cidrs): true when any valid CIDR in the list holds the address. */
export function inCidrRanges(ip: unknown, cidrs: unknown): boolean {
  // cel-js hands a list<string> over as an array; anything else is treated as "no ranges".
  if (typeof ip !== 'string' || !Array.isArray(cidrs)) return false;
  const address = parseIp(ip);
  if (!address) return false;
  for (const cidr of cidrs as unknown[]) {
    if (typeof cidr !== 'string') continue;
    const range = parseCidr(cidr);
    if (range && cidrContains(range, address)) return true;
  }
  return false;
}
