// Certificates for HTTPS endpoint names the edge certificate does not cover (a custom Hostname,
// a name deeper than *.EDGE_DOMAIN), issued from the CA on first use and kept in memory.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { CertificateAuthority } from './ca.js';
import { LEAF_VALIDITY_DAYS, issueCertificate } from './certificates.js';
import { canonicalIp, normalizeDnsName } from './names.js';

export interface OnDemandOptions {
  /** Most contexts kept; the least recently used goes first. Default 256. */
  maxEntries?: number;
  /** Validity of each certificate, days. Default 397. */
  days?: number;
}

export interface OnDemandCertificates {
  /** A SecureContext for `hostname` (a DNS name or an IP address); throws on an invalid name. */
  secureContext(hostname: string): Promise<SecureContext>;
  readonly size: number;
}

interface Entry {
  context: SecureContext;
  /** After this the certificate is reissued (30 days before it expires, or sooner). */
  renewAt: number;
}

export function onDemandCertificates(ca: CertificateAuthority, options: OnDemandOptions = {}): OnDemandCertificates {
  const maxEntries = Math.max(1, options.maxEntries ?? 256);
  const days = options.days ?? LEAF_VALIDITY_DAYS;
  const cache = new Map<string, Entry>();
  const pending = new Map<string, Promise<SecureContext>>();

  async function issue(name: string, ip: boolean): Promise<SecureContext> {
    const leaf = await issueCertificate(ca, ip ? { ipAddresses: [name], days } : { dnsNames: [name], days });
    const context = createSecureContext({ cert: leaf.certPem, key: leaf.keyPem });
    const lifetime = leaf.notAfter.getTime() - Date.now();
    cache.set(name, { context, renewAt: Date.now() + Math.max(lifetime - 30 * 86_400_000, lifetime / 2) });
    while (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
    return context;
  }

  return {
    get size() {
      return cache.size;
    },
    async secureContext(hostname: string): Promise<SecureContext> {
      const ip = canonicalIp(hostname);
      const name = ip ?? normalizeDnsName(hostname);
      if (name === undefined) throw new TypeError(`not a host name: ${JSON.stringify(hostname)}`);
      const hit = cache.get(name);
      if (hit && hit.renewAt > Date.now()) {
        cache.delete(name);
        cache.set(name, hit);
        return hit.context;
      }
      let promise = pending.get(name);
      if (!promise) {
        promise = issue(name, ip !== undefined).finally(() => pending.delete(name));
        pending.set(name, promise);
      }
      return promise;
    },
  };
}
