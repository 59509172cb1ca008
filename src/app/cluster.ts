// CLUSTER.md §1 at start: the cluster CA when CLUSTER_SECRET is set; without it, a refusal when
// the database holds one (this instance would present certificates agents of the cluster reject).
import type { Config } from '../config.js';
import { ClusterSecretError, refuseStoredClusterCa } from '../domain/cluster/cluster-ca.js';
import type { Store } from '../storage/db.js';
import { SqlClusterCaRepository } from '../storage/repositories/cluster-ca.js';
import type { CertificateAuthority } from '../tunnels/tls/ca.js';
import { loadClusterCa } from '../tunnels/tls/cluster-ca.js';
import { StartupError, reason } from './startup-error.js';

/** The cluster CA for the data plane; undefined for TLS_DIR's own, or with no data plane (it needs none). */
export async function clusterCertificateAuthority(config: Config, store: Store): Promise<CertificateAuthority | undefined> {
  if (config.tunnels.agentPort === 0) return undefined;
  const repository = new SqlClusterCaRepository(store);
  const secret = config.tunnels.cluster.secret;
  try {
    if (secret === undefined) {
      await refuseStoredClusterCa(repository);
      return undefined;
    }
    return await loadClusterCa({ tlsDir: config.tunnels.tlsDir, secret, repository });
  } catch (error) {
    if (error instanceof ClusterSecretError) throw new StartupError('CLUSTER_SECRET', error.message);
    throw new StartupError('CLUSTER_SECRET/TLS_DIR', `cannot load the cluster CA: ${reason(error)}`);
  }
}
