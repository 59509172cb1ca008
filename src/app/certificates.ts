import type { Config } from '../config.js';
import { listCertificates, type CertificateCatalog, type CertificateSummary } from '../domain/certificates/inventory.js';
import { openStore } from '../storage/db.js';
import { SqlAcmeRepository } from '../storage/repositories/acme.js';
import { describeCertificate, fileCertificateCatalog } from '../tunnels/tls/inventory.js';

/**
 * Every certificate a server with `config` serves (`burrow certs list`): the catalogs of each
 * origin. ACME certificates, kept in the database, are one more catalog here.
 */
export function listServedCertificates(config: Config): Promise<CertificateSummary[]> {
  const catalogs: CertificateCatalog[] = [fileCertificateCatalog(config.tunnels), ...(config.tunnels.acme ? [acmeCatalog(config)] : [])];
  return listCertificates(catalogs);
}

/** The ACME certificates in the database (none while it does not exist yet). */
function acmeCatalog(config: Config): CertificateCatalog {
  return {
    async list() {
      let store;
      try {
        store = openStore(config.databaseUrl, { poolSize: 1, statementTimeoutMs: config.dbStatementTimeoutMs, mustExist: true });
      } catch {
        return [];
      }
      try {
        const rows = await new SqlAcmeRepository(store).certificates().catch(() => []);
        return rows.flatMap((row) => (row.certPem === null ? [] : [describeCertificate(row.certPem, 'acme')]));
      } finally {
        await store.close();
      }
    },
  };
}
