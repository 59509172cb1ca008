// Host names and IP addresses as they go into (and are compared in) subjectAltName entries.
import { isIP } from 'node:net';

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * The name lower-cased if it is a valid DNS name for a certificate (LDH labels of 1–63
 * characters, underscores tolerated, 253 characters at most, no trailing dot; a leftmost `*`
 * label is allowed when `wildcard` is true), else undefined. IP literals are not DNS names.
 */
export function normalizeDnsName(name: string, { wildcard = true }: { wildcard?: boolean } = {}): string | undefined {
  if (name.length === 0 || name.length > 253) return undefined;
  const lower = name.toLowerCase();
  if (isIP(lower) !== 0) return undefined;
  const labels = lower.split('.');
  for (let i = 0; i < labels.length; i++) {
    const label = labels[i]!;
    if (i === 0 && label === '*' && wildcard && labels.length > 1) continue;
    if (!LABEL.test(label)) return undefined;
  }
  return lower;
}

/** The canonical text of an IP address (`0:0::1` → `::1`), or undefined when `ip` is not one. */
export function canonicalIp(ip: string): string | undefined {
  const family = isIP(ip);
  if (family === 4) return new URL(`http://${ip}/`).hostname;
  if (family === 6) return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  return undefined;
}

export interface SubjectNames {
  dnsNames: string[];
  ipAddresses: string[];
}

/** Sorted, deduplicated, validated names; throws on an invalid one. */
export function normalizeNames(names: { dnsNames?: readonly string[]; ipAddresses?: readonly string[] }): SubjectNames {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const name of names.dnsNames ?? []) {
    const normal = normalizeDnsName(name);
    if (normal === undefined) throw new TypeError(`not a valid DNS name for a certificate: ${JSON.stringify(name)}`);
    dns.add(normal);
  }
  for (const ip of names.ipAddresses ?? []) {
    const normal = canonicalIp(ip);
    if (normal === undefined) throw new TypeError(`not a valid IP address: ${JSON.stringify(ip)}`);
    ips.add(normal);
  }
  return { dnsNames: [...dns].sort(), ipAddresses: [...ips].sort() };
}

export function sameNames(a: SubjectNames, b: SubjectNames): boolean {
  const key = (n: SubjectNames) => JSON.stringify([n.dnsNames, n.ipAddresses]);
  return key(a) === key(b);
}
