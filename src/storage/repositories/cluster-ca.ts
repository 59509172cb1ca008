import type { ClusterCaRepository, StoredClusterCa } from '../../domain/cluster/cluster-ca.js';
import type { Store } from '../types.js';

const ROW_ID = 1;

/**
 * The cluster CA (migration 013): one row. Read once per start, so plain Kysely queries; the
 * insert is `ON CONFLICT DO NOTHING` on the primary key, so of two instances starting at once
 * one stores its CA and both read that one back.
 */
export class SqlClusterCaRepository implements ClusterCaRepository {
  constructor(private readonly store: Store) {}

  async read(): Promise<StoredClusterCa | undefined> {
    const row = await this.store.db.selectFrom('cluster_ca').select(['cert_pem', 'sealed_key', 'created_at']).where('id', '=', ROW_ID).executeTakeFirst();
    return row && { certPem: row.cert_pem, sealedKey: row.sealed_key, createdAt: row.created_at };
  }

  async insertIfAbsent(ca: StoredClusterCa): Promise<StoredClusterCa> {
    await this.store.db
      .insertInto('cluster_ca')
      .values({ id: ROW_ID, cert_pem: ca.certPem, sealed_key: ca.sealedKey, created_at: ca.createdAt })
      .onConflict((c) => c.column('id').doNothing())
      .execute();
    await this.store.durable();
    const stored = await this.read();
    if (!stored) throw new Error('the cluster CA row vanished after its insert');
    return stored;
  }
}
