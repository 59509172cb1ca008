// CLUSTER.md §1: one certificate authority for every instance, kept in the database with its key
// sealed by CLUSTER_SECRET. The first instance creates it; the others (and later starts) use it.
import { seal, unseal, UnsealError } from '../sealing.js';

/** The row: the certificate in clear (it is public), the key sealed. */
export interface StoredClusterCa {
  readonly certPem: string;
  readonly sealedKey: string;
  readonly createdAt: string;
}

export interface ClusterCaRepository {
  read(): Promise<StoredClusterCa | undefined>;
  /** Stores `ca` unless one is stored already; returns the one stored (this or the earlier one). */
  insertIfAbsent(ca: StoredClusterCa): Promise<StoredClusterCa>;
}

export interface ClusterCaPair {
  readonly certPem: string;
  readonly keyPem: string;
  /** This call created it. */
  readonly created: boolean;
}

/** Why the stored CA cannot be used; the message names the variable to fix. */
export class ClusterSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterSecretError';
  }
}

const CONTEXT = 'cluster-ca';

/**
 * The cluster CA: the stored one, opened with `secret`; else a new one from `create`, stored
 * unless another instance stored one first (then that one is used, and `create`'s is dropped).
 */
export async function loadOrCreateClusterCa(
  repository: ClusterCaRepository,
  secret: Buffer,
  create: () => Promise<{ certPem: string; keyPem: string }>,
  now: () => Date = () => new Date(),
): Promise<ClusterCaPair> {
  let stored = await repository.read();
  let created = false;
  if (!stored) {
    const fresh = await create();
    const candidate = { certPem: fresh.certPem, sealedKey: seal(secret, fresh.keyPem, CONTEXT), createdAt: now().toISOString() };
    stored = await repository.insertIfAbsent(candidate);
    created = stored.sealedKey === candidate.sealedKey;
  }
  return { certPem: stored.certPem, keyPem: open(secret, stored), created };
}

/** Without CLUSTER_SECRET, an instance must not serve another CA than the cluster's. */
export async function refuseStoredClusterCa(repository: ClusterCaRepository): Promise<void> {
  const stored = await repository.read();
  if (stored) {
    throw new ClusterSecretError(`is not set, but the database holds the cluster CA created on ${stored.createdAt}: give this instance the CLUSTER_SECRET of the others`);
  }
}

function open(secret: Buffer, stored: StoredClusterCa): string {
  try {
    return unseal(secret, stored.sealedKey, CONTEXT);
  } catch (error) {
    if (!(error instanceof UnsealError)) throw error;
    throw new ClusterSecretError(`cannot decrypt the cluster CA stored in the database (created on ${stored.createdAt}): CLUSTER_SECRET differs from the one that created it`);
  }
}
