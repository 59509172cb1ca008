// Which certificate an HTTPS endpoint is served with: the edge certificate when it covers the
// name, else (with burrow's CA) one issued on demand for that name.
import { createSecureContext, type SecureContext } from 'node:tls';
import { certificateNames } from '../tls/certificates.js';
import type { TlsMaterial } from '../tls/material.js';
import { onDemandCertificates, type OnDemandCertificates } from '../tls/on-demand.js';

export class EdgeCertificates {
  private edge!: SecureContext;
  private dnsNames!: readonly string[];
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

  /** The edge certificate covers `name` (exactly, or by a one-label wildcard). */
  covers(name: string): boolean {
    const dot = name.indexOf('.');
    return this.dnsNames.some((san) => san === name || (san.startsWith('*.') && dot > 0 && san.slice(2) === name.slice(dot + 1)));
  }

  /** With the operator's own certificate and no CA, names it does not cover still get it. */
  async contextFor(name: string): Promise<SecureContext> {
    if (this.covers(name) || !this.onDemand) return this.edge;
    return this.onDemand.secureContext(name);
  }
}
