import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export interface CertFiles {
  cert: string;
  key: string;
}

/**
 * A self-signed P-256 certificate for the bench's own TLS (the relay pair's hop, the local TLS
 * server behind tls endpoints and edges), made with the openssl CLI: burrow's CA is burrow's.
 */
export function makeSelfSignedCert(dir: string): CertFiles {
  const files = { cert: join(dir, 'bench-cert.pem'), key: join(dir, 'bench-key.pem') };
  const result = spawnSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
      '-subj', '/CN=relay.bench', '-addext', 'subjectAltName=DNS:relay.bench,DNS:*.burrow.localhost,IP:127.0.0.1',
      '-keyout', files.key, '-out', files.cert,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  if (result.status !== 0) throw new Error(`openssl could not make the bench's certificate: ${result.stderr || result.error}`);
  return files;
}
