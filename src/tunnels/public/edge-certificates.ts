// Which certificate an HTTPS endpoint is served with: the edge certificate when it covers the
// name, else (with ACME) the one the ACME CA issued for it, else (with burrow's CA) one issued on
// demand for that name.
import { createSecureContext, type SecureContext } from 'node:tls';
import { certificateNames } from '../tls/certificates.js';
import type { TlsMaterial } from '../tls/material.js';
import { onDemandCertificates, type OnDemandCertificates } from '../tls/on-demand.js';

/** How long a handshake waits for a name's first ACME certificate before it gets the fallback. */
export const ACME_PENDING_WAIT_MS = 3_000;

/** The ACME certificates (tls/acme/acme-certificates.ts), as the TLS port needs them. */
export interface AcmeIssued {
  contextFor(name: string): SecureContext | undefined;
  within(name: string, ms: number): Promise<SecureContext | undefined>;
}

export class EdgeCertificates {
  private edge!: SecureContext;
  private dnsNames!: readonly string[];
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
    // an ACME certificate first: the EDGE_DOMAIN wildcard (dns-01) replaces the edge certificate
    const issued = this.acme?.contextFor(name) ?? (ownName && !this.covers(name) ? await this.acme?.within(name, ACME_PENDING_WAIT_MS) : undefined);
    if (issued) return issued;
    if (this.covers(name)) return this.edge;
    if (!this.onDemand) return this.edge;
    return this.onDemand.secureContext(name);
  }
}
