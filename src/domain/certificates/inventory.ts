// The certificates burrow serves, wherever they come from (CERTIFICATES.md §2): what
// `burrow certs list` prints and `burrow_certificate_expiry_seconds` measures. Each origin is a
// catalog: the operator's files and burrow's private CA (tunnels/tls/inventory.ts) today; ACME
// certificates from the database plug in as one more catalog.

/** `file`: the operator's files; `private_ca`: a leaf of burrow's own CA; `acme`: ordered from an ACME CA. */
export type CertificateSource = 'file' | 'private_ca' | 'acme';

export interface CertificateSummary {
  /** Stable for one certificate: for files and the private CA, the start of its SHA-256 fingerprint. */
  readonly id: string;
  /** DNS names and IP addresses of its subjectAltName. */
  readonly names: readonly string[];
  /** The issuer's common name (its whole distinguished name when it has none). */
  readonly issuer: string;
  readonly notAfter: Date;
  readonly source: CertificateSource;
}

export interface CertificateCatalog {
  list(): Promise<readonly CertificateSummary[]>;
}

/** Every catalog's certificates, once each (the agent and edge ports may serve the same one), soonest expiry first. */
export async function listCertificates(catalogs: readonly CertificateCatalog[]): Promise<CertificateSummary[]> {
  const byId = new Map<string, CertificateSummary>();
  for (const catalog of catalogs) for (const summary of await catalog.list()) if (!byId.has(summary.id)) byId.set(summary.id, summary);
  return [...byId.values()].sort((a, b) => a.notAfter.getTime() - b.notAfter.getTime() || a.id.localeCompare(b.id));
}

/** The row of `--json`: `[{"id","names","issuer","not_after","source"}]`. */
export function certificateRow(summary: CertificateSummary): { id: string; names: string[]; issuer: string; not_after: string; source: CertificateSource } {
  return { id: summary.id, names: [...summary.names], issuer: summary.issuer, not_after: summary.notAfter.toISOString(), source: summary.source };
}
