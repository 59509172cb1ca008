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

/**
 * Parsed addresses and CIDRs by their text, for the CEL functions: an expression such as
 * inCidrRange(conn.client_ip, '10.0.0.0/8') runs on every connection with the same literal, and
 * parsing it each time would cost more than the comparison. Bounded; cleared when full.
 */
const PARSE_CACHE_SIZE = 4096;
const cidrCache = new Map<string, Cidr | null>();
const ipCache = new Map<string, IpAddress | null>();

function cached<T>(cache: Map<string, T | null>, text: string, parse: (text: string) => T | null): T | null {
  let value = cache.get(text);
  if (value === undefined) {
    value = parse(text);
    if (cache.size >= PARSE_CACHE_SIZE) cache.clear();
    cache.set(text, value);
  }
  return value;
}

/** parseIp with the same bounded cache: a client's address is parsed once, not per connection. */
export function parseIpCached(text: string): IpAddress | null {
  return cached(ipCache, text, parseIp);
}

/** CEL inCidrRange(ip, cidr): false for an invalid address or CIDR, never an error. */
export function inCidrRange(ip: unknown, cidr: unknown): boolean {
  if (typeof ip !== 'string' || typeof cidr !== 'string') return false;
  const address = cached(ipCache, ip, parseIp);
  const range = address && cached(cidrCache, cidr, parseCidr);
  return address !== null && range !== null && cidrContains(range, address);
}

/** CEL inCidrRanges(ip, cidrs): true when any valid CIDR in the list holds the address. */
export function inCidrRanges(ip: unknown, cidrs: unknown): boolean {
  // cel-js hands a list<string> over as an array; anything else is treated as "no ranges".
  if (typeof ip !== 'string' || !Array.isArray(cidrs)) return false;
  const address = cached(ipCache, ip, parseIp);
  if (!address) return false;
  for (const cidr of cidrs as unknown[]) {
    if (typeof cidr !== 'string') continue;
    const range = cached(cidrCache, cidr, parseCidr);
    if (range && cidrContains(range, address)) return true;
  }
  return false;
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d), or null. */
export function unmapIPv4(ip: IpAddress): IpAddress | null {
  return ip.version === 6 && isV4Mapped(ip.bytes) ? { version: 4, bytes: ip.bytes.slice(12) } : null;
}

const v4Texts = new WeakMap<IpAddress, string | null>();

/** The address in its usual text form when it is IPv4 or IPv4-mapped IPv6; otherwise null (remembered per parsed address). */
export function ipv4Text(ip: IpAddress): string | null {
  let text = v4Texts.get(ip);
  if (text === undefined) {
    const v4 = ip.version === 4 ? ip : unmapIPv4(ip);
    text = v4 ? v4.bytes.join('.') : null;
    v4Texts.set(ip, text);
  }
  return text;
}

/**
 * A set of CIDRs answering "which is the most specific CIDR holding this address?" in
 * O(log n): built once per policy, it is a sorted list of disjoint address segments per family,
 * each owned by the innermost CIDR covering it (CIDRs are either nested or disjoint, so one
 * sweep finds it). Addresses are compared as 32-bit words: one for IPv4, four for IPv6.
 */
export class CidrSet {
  private constructor(
    private readonly v4: Segments,
    private readonly v6: Segments,
    /** Number of distinct CIDRs. */
    readonly size: number,
  ) {}

  /** `entries` are parsed CIDRs with the text to report for each (as written). Duplicates keep the first. */
  static build(entries: ReadonlyArray<{ cidr: Cidr; text: string }>): CidrSet {
    const v4 = entries.filter((e) => e.cidr.version === 4);
    const v6 = entries.filter((e) => e.cidr.version === 6);
    const a = buildSegments(v4, 1);
    const b = buildSegments(v6, 4);
    return new CidrSet(a.segments, b.segments, a.distinct + b.distinct);
  }

  /**
   * The text of the most specific CIDR holding `ip`, or undefined. An IPv4-mapped IPv6 address is
   * looked up among the IPv4 CIDRs first, then among the IPv6 ones (::ffff:0:0/96 holds it too).
   */
  lookup(ip: IpAddress): string | undefined {
    if (ip.version === 4) return find(this.v4, ip.bytes, 0);
    if (this.v4.count > 0 && isV4Mapped(ip.bytes)) {
      const found = find(this.v4, ip.bytes, 12);
      if (found !== undefined) return found;
    }
    return find(this.v6, ip.bytes, 0);
  }
}

interface Segments {
  /** 32-bit words per address: 1 or 4. */
  width: number;
  count: number;
  /** count × width words: first address of each segment, ascending. */
  starts: Uint32Array;
  /** count × width words: last address of each segment. */
  ends: Uint32Array;
  owners: string[];
}

function toBigInt(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

function buildSegments(entries: ReadonlyArray<{ cidr: Cidr; text: string }>, width: number): { segments: Segments; distinct: number } {
  const bits = BigInt(width * 32);
  const ranges = entries.map((entry, order) => {
    const hostBits = bits - BigInt(entry.cidr.prefix);
    const start = (toBigInt(entry.cidr.bytes) >> hostBits) << hostBits;
    return { start, end: start + (1n << hostBits) - 1n, text: entry.text, order };
  });
  // By start, then the wider range first (it contains the narrower), then in list order.
  ranges.sort((x, y) => (x.start !== y.start ? (x.start < y.start ? -1 : 1) : x.end !== y.end ? (x.end > y.end ? -1 : 1) : x.order - y.order));

  const out: Array<{ start: bigint; end: bigint; owner: string }> = [];
  const stack: typeof ranges = [];
  let cursor = 0n;
  let distinct = 0;
  const closeTop = () => {
    const top = stack.pop()!;
    if (cursor <= top.end) out.push({ start: cursor, end: top.end, owner: top.text });
    cursor = top.end + 1n;
  };
  for (const range of ranges) {
    const top = stack[stack.length - 1];
    if (top && top.start === range.start && top.end === range.end) continue; // a duplicate
    while (stack.length > 0 && stack[stack.length - 1]!.end < range.start) closeTop();
    const parent = stack[stack.length - 1];
    if (parent && cursor < range.start) out.push({ start: cursor, end: range.start - 1n, owner: parent.text });
    stack.push(range);
    cursor = range.start;
    distinct++;
  }
  while (stack.length > 0) closeTop();

  const starts = new Uint32Array(out.length * width);
  const ends = new Uint32Array(out.length * width);
  out.forEach((segment, i) => {
    writeWords(starts, i * width, segment.start, width);
    writeWords(ends, i * width, segment.end, width);
  });
  return { segments: { width, count: out.length, starts, ends, owners: out.map((s) => s.owner) }, distinct };
}

function writeWords(target: Uint32Array, at: number, value: bigint, width: number): void {
  for (let w = width - 1; w >= 0; w--) {
    target[at + w] = Number(value & 0xffffffffn);
    value >>= 32n;
  }
}

/** Compares the address (bytes from `offset`) with the word group at `at`: -1, 0 or 1. */
function compare(words: Uint32Array, at: number, bytes: Uint8Array, offset: number, width: number): number {
  for (let w = 0; w < width; w++) {
    const b = offset + w * 4;
    const value = ((bytes[b]! << 24) | (bytes[b + 1]! << 16) | (bytes[b + 2]! << 8) | bytes[b + 3]!) >>> 0;
    const other = words[at + w]!;
    if (value !== other) return value < other ? -1 : 1;
  }
  return 0;
}

function find(segments: Segments, bytes: Uint8Array, offset: number): string | undefined {
  const { width, starts, ends } = segments;
  // The last segment starting at or before the address.
  let low = 0;
  let high = segments.count - 1;
  let candidate = -1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    if (compare(starts, mid * width, bytes, offset, width) >= 0) {
      candidate = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  if (candidate < 0 || compare(ends, candidate * width, bytes, offset, width) > 0) return undefined;
  return segments.owners[candidate];
}
