// With CLUSTER_SECRET, the CA that issues the agent and edge certificates is the cluster's, from
// the database (domain/cluster/cluster-ca.ts), instead of TLS_DIR's own: whichever instance an
// agent reaches presents a certificate it trusts. Its certificate (never its key) goes to
// TLS_DIR/ca.pem for agents to trust.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadOrCreateClusterCa, type ClusterCaRepository } from '../../domain/cluster/cluster-ca.js';
import { CA_CERT_FILE, CA_KEY_FILE, createCaPair, type CertificateAuthority } from './ca.js';
import { TlsConfigError, describeFsError } from './errors.js';
import { PUBLIC_MODE, makeDirectories, replaceAtomically } from './files.js';

/** Where a local CA's key found in TLS_DIR is moved: kept, but no longer beside another CA's certificate. */
export const SET_ASIDE_KEY_FILE = `${CA_KEY_FILE}.before-cluster`;

export interface ClusterCaOptions {
  readonly tlsDir: string;
  /** CLUSTER_SECRET */
  readonly secret: Buffer;
  readonly repository: ClusterCaRepository;
}

/** The cluster CA, created if no instance has yet; ca.pem in TLS_DIR replaced by its certificate. */
export async function loadClusterCa(options: ClusterCaOptions): Promise<CertificateAuthority> {
  const pair = await loadOrCreateClusterCa(options.repository, options.secret, createCaPair);
  const cert = new X509Certificate(pair.certPem);
  if (!cert.checkPrivateKey(createPrivateKey(pair.keyPem))) throw new TlsConfigError('the cluster CA stored in the database has a key that is not its certificate\'s');
  if (Date.parse(cert.validTo) <= Date.now()) throw new TlsConfigError(`the cluster CA stored in the database expired on ${cert.validTo}`);

  const root = resolve(options.tlsDir);
  const caPath = join(root, CA_CERT_FILE);
  try {
    await makeDirectories(root, 0o700);
    // A key of this TLS_DIR's own CA would otherwise sit beside the cluster's certificate.
    await rename(join(root, CA_KEY_FILE), join(root, SET_ASIDE_KEY_FILE)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await replaceAtomically(caPath, pair.certPem, PUBLIC_MODE);
  } catch (error) {
    throw new TlsConfigError(`cannot write the cluster CA's certificate to ${caPath}: ${describeFsError(error)}`, { cause: error });
  }
  return { certPem: pair.certPem, keyPem: pair.keyPem, caPath, keyPath: undefined, created: pair.created };
}
