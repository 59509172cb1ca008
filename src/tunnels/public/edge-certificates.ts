// Which certificate an HTTPS endpoint is served with: a pair of EDGE_TLS_CERTS_DIR naming it
// (exactly, then by a wildcard), else the edge certificate when it covers the name, else (with
// burrow's CA) one issued on demand for that name, else the edge certificate.
import { createSecureContext, type SecureContext } from 'node:tls';
import { certificateNames } from '../tls/certificates.js';
import type { DirectoryPair } from '../tls/cert-directory.js';
import type { TlsMaterial } from '../tls/material.js';
import { onDemandCertificates, type OnDemandCertificates } from '../tls/on-demand.js';

interface ByName {
  readonly exact: ReadonlyMap<string, SecureContext>;
  /** By the domain under the wildcard: `example.com` for `*.example.com`. */
  readonly wildcard: ReadonlyMap<string, SecureContext>;
}

export class EdgeCertificates {
  private edge!: SecureContext;
  private dnsNames!: readonly string[];
  private directory: ByName = { exact: new Map(), wildcard: new Map() };
  private readonly onDemand: OnDemandCertificates | undefined;

  constructor(material: Pick<TlsMaterial, 'cert' | 'key' | 'ca'>) {
    this.replace(material);
    this.onDemand = material.ca ? onDemandCertificates(material.ca) : undefined;
  }

  /** The edge certificate, renewed: new connections get it. */
  replace(material: { cert: string; key: string }): void {
    this.edge = createSecureContext({ cert: material.cert, key: material.key });
    this.dnsNames = certificateNames(material.cert).dnsNames;
  }

  /**
   * The directory's pairs, swapped in whole: new connections get them. Where two pairs name the
   * same name, the one that lives longer wins.
   */
  useDirectory(pairs: readonly DirectoryPair[]): void {
    const exact = new Map<string, SecureContext>();
    const wildcard = new Map<string, SecureContext>();
    for (const pair of [...pairs].sort((a, b) => a.notAfter - b.notAfter)) {
      const context = createSecureContext({ cert: pair.cert, key: pair.key });
      for (const name of pair.names) {
        if (name.startsWith('*.')) wildcard.set(name.slice(2), context);
        else exact.set(name, context);
      }
    }
    this.directory = { exact, wildcard };
  }

  /** The edge certificate covers `name` (exactly, or by a one-label wildcard). */
  covers(name: string): boolean {
    const dot = name.indexOf('.');
    return this.dnsNames.some((san) => san === name || (san.startsWith('*.') && dot > 0 && san.slice(2) === name.slice(dot + 1)));
  }

  /** With the operator's own certificate and no CA, names it does not cover still get it. */
  async contextFor(name: string): Promise<SecureContext> {
    const dot = name.indexOf('.');
    const fromDirectory = this.directory.exact.get(name) ?? (dot > 0 ? this.directory.wildcard.get(name.slice(dot + 1)) : undefined);
    if (fromDirectory) return fromDirectory;
    if (this.covers(name) || !this.onDemand) return this.edge;
    return this.onDemand.secureContext(name);
  }
}
