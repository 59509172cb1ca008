import type { Config } from '../config.js';
import { listCertificates, type CertificateCatalog, type CertificateSummary } from '../domain/certificates/inventory.js';
import { fileCertificateCatalog } from '../tunnels/tls/inventory.js';

/**
 * Every certificate a server with `config` serves (`burrow certs list`): the catalogs of each
 * origin. ACME certificates, kept in the database, are one more catalog here.
 */
export function listServedCertificates(config: Config): Promise<CertificateSummary[]> {
  const catalogs: CertificateCatalog[] = [fileCertificateCatalog(config.tunnels)];
  return listCertificates(catalogs);
}
