// Which certificate an HTTPS endpoint is served with: a pair of EDGE_TLS_CERTS_DIR naming it
// (exactly, then by a wildcard), else an ACME certificate of the name or its wildcard, else the
// edge certificate when it covers the name, else (an endpoint's own name or a terminated TLS edge
// hostport, with ACME) up to 3 s waiting for its pending order, else (with burrow's CA) one issued
// on demand for that name, else the edge certificate.
import { createSecureContext, type SecureContext } from 'node:tls';
import { certificateNames } from '../tls/certificates.js';
import type { DirectoryPair } from '../tls/cert-directory.js';
import type { TlsMaterial } from '../tls/material.js';
import { onDemandCertificates, type OnDemandCertificates } from '../tls/on-demand.js';

/** How long a handshake waits for a name's first ACME certificate before it gets the fallback. */
export const ACME_PENDING_WAIT_MS = 3_000;

/** The ACME certificates (tls/acme/acme-certificates.ts), as the TLS port needs them. */
export interface AcmeIssued {
  contextFor(name: string): SecureContext | undefined;
  within(name: string, ms: number): Promise<SecureContext | undefined>;
}

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

  constructor(
    material: Pick<TlsMaterial, 'cert' | 'key' | 'ca'>,
    private readonly acme?: AcmeIssued,
  ) {
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

  /**
   * With the operator's own certificate and no CA, names it does not cover still get it.
   * `ownName`: an endpoint is bound on exactly this name, so ACME may order it (a name a
   * wildcard endpoint covers is not ordered: any SNI under it would start an order).
   */
  async contextFor(name: string, ownName = false): Promise<SecureContext> {
    const dot = name.indexOf('.');
    const fromDirectory = this.directory.exact.get(name) ?? (dot > 0 ? this.directory.wildcard.get(name.slice(dot + 1)) : undefined);
    if (fromDirectory) return fromDirectory;
    // an ACME certificate next: the EDGE_DOMAIN wildcard (dns-01) replaces the edge certificate
    const issued = this.acme?.contextFor(name) ?? (ownName && !this.covers(name) ? await this.acme?.within(name, ACME_PENDING_WAIT_MS) : undefined);
    if (issued) return issued;
    if (this.covers(name) || !this.onDemand) return this.edge;
    return this.onDemand.secureContext(name);
  }
}
