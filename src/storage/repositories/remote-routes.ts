import type { RemoteRoute, RemoteRouteSource } from '../../domain/tunnels/routing-cache.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';
import { parseLabelsOrNull } from './labels.js';

/** The NOTIFY channel of migration 018's triggers. */
const CHANNEL = 'burrow_routes';

/**
 * The routing cache's reads (CLUSTER.md §2): every live tunnel of the other instances that can be
 * reached (a cluster address recorded), with its endpoint's pooling and version. One scan of
 * tunnels per refresh; PostgreSQL only (with SQLite there is one instance and nothing to route).
 */
export class SqlRemoteRouteSource implements RemoteRouteSource {
  private readonly statements;

  constructor(private readonly store: Store) {
    const db = store.db;
    this.statements = {
      elsewhere: store.prepare(
        db
          .selectFrom('tunnels')
          .innerJoin('instances', 'instances.id', 'tunnels.instance_id')
          .leftJoin('endpoints', 'endpoints.id', 'tunnels.endpoint_id')
          .select([
            'tunnels.id',
            'tunnels.session_id',
            'tunnels.account_id',
            'tunnels.instance_id',
            'instances.cluster_addr',
            'tunnels.proto',
            'tunnels.public_url',
            'tunnels.labels',
            'tunnels.endpoint_id',
            'endpoints.pooling_enabled',
            'endpoints.updated_at',
            'endpoints.policy_version',
          ])
          .where('tunnels.instance_id', '<>', param('instanceId'))
          .where('instances.cluster_addr', 'is not', null)
          // bind order, as the holder's pools have it: a pool's first tunnel's policy is the endpoint's
          .orderBy('tunnels.started_at')
          .orderBy('tunnels.id'),
      ),
    };
  }

  async tunnelsElsewhere(instanceId: string): Promise<RemoteRoute[]> {
    const rows = await this.statements.elsewhere.all({ instanceId });
    return rows.map((row) => ({
      tunnelId: row.id,
      sessionId: row.session_id,
      accountId: row.account_id,
      instanceId: row.instance_id,
      clusterAddr: row.cluster_addr!,
      proto: row.proto,
      url: row.public_url,
      labels: parseLabelsOrNull(row.labels),
      endpointId: row.endpoint_id,
      poolingEnabled: row.pooling_enabled === 1,
      // the counter changes at every patch; updated_at also when the row is written anew
      version: row.policy_version === null ? '' : `${row.policy_version}@${row.updated_at}`,
    }));
  }

  watch(onChange: () => void): Promise<() => Promise<void>> {
    if (!this.store.listen) return Promise.reject(new Error('this database cannot notify: only PostgreSQL can route between instances'));
    return this.store.listen(CHANNEL, onChange);
  }
}
