// The certificates of files and of burrow's private CA, described for `burrow certs list` and
// /metrics (domain/certificates/inventory.ts). Reading only: nothing is created or issued here.
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import type { TunnelConfig } from '../../config.js';
import type { CertificateCatalog, CertificateSource, CertificateSummary } from '../../domain/certificates/inventory.js';
import { readCertificateDirectory } from './cert-directory.js';
import { certificateNames } from './certificates.js';
import { readIfExists } from './files.js';

/** 16 hex digits (64 bits) of the SHA-256 fingerprint: unique among the few certificates one server has. */
const ID_HEX_DIGITS = 16;

export function describeCertificate(pem: string, source: CertificateSource): CertificateSummary {
  const cert = new X509Certificate(pem);
  const names = certificateNames(pem);
  const issuerCn = cert.issuer.split('\n').find((part) => part.startsWith('CN='));
  return {
    id: cert.fingerprint256.replaceAll(':', '').toLowerCase().slice(0, ID_HEX_DIGITS),
    names: [...names.dnsNames, ...names.ipAddresses],
    issuer: issuerCn ? issuerCn.slice(3) : cert.issuer.replaceAll('\n', ', '),
    notAfter: new Date(cert.validTo),
    source,
  };
}

/**
 * What a server with `config` serves from files, as they are on disk now: the operator's files,
 * or the leaves burrow's CA issued into TLS_DIR (agent.pem, edge.pem), and EDGE_TLS_CERTS_DIR's
 * usable pairs. Certificates issued on demand live in one server's memory and are not listed.
 */
export function fileCertificateCatalog(config: TunnelConfig): CertificateCatalog {
  return {
    async list() {
      const found: CertificateSummary[] = [];
      const add = async (path: string, source: CertificateSource) => {
        const pem = await readIfExists(path).catch(() => undefined);
        if (pem === undefined) return;
        try {
          found.push(describeCertificate(pem, source));
        } catch {
          // not a certificate: the server refuses it at start, with the reason
        }
      };
      if (config.agentPort > 0) await add(config.agentTlsCert ?? join(config.tlsDir, 'agent.pem'), config.agentTlsCert ? 'file' : 'private_ca');
      if (config.agentPort > 0 && config.edgeTlsPort > 0) {
        await add(config.edgeTlsCert ?? join(config.tlsDir, 'edge.pem'), config.edgeTlsCert ? 'file' : 'private_ca');
        if (config.edgeTlsCertsDir) {
          const entries = await readCertificateDirectory(config.edgeTlsCertsDir).catch(() => []);
          for (const entry of entries) if ('pair' in entry) found.push(describeCertificate(entry.pair.cert, 'file'));
        }
      }
      return found;
    },
  };
}
