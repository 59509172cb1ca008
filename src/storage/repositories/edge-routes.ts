import type { EdgeRoute, EdgeRouteReader } from '../../domain/edges/types.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';
import { parseLabels } from './labels.js';
import { terminationOfRow, trafficPolicyOfRow } from './tls-edges.js';

/** What can be the host of a hostport (SPEC §5.3 `domain | ipv4`), lower-cased: nothing LIKE treats specially. */
const HOST = /^[a-z0-9.-]{1,253}$/;

/**
 * The data plane's lookup of an edge by SNI host (TUNNELS.md §4), across accounts (live ones
 * only). Hostports are stored as a JSON list of "host:port", so `"<host>:` inside it finds the
 * host whatever its port; the host is checked against HOST first, so the pattern holds no LIKE
 * wildcard. One indexed-by-nothing scan of tls_edges: callers should cache (for less than the
 * 1 s within which a module change must apply).
 */
export class SqlEdgeRouteReader implements EdgeRouteReader {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    this.statements = {
      byHost: store.prepare(
        db
          .selectFrom('tls_edges')
          .innerJoin('accounts', 'accounts.id', 'tls_edges.account_id')
          .leftJoin('tunnel_group_backends', 'tunnel_group_backends.id', 'tls_edges.backend_id')
          .select([
            'tls_edges.id',
            'tls_edges.account_id',
            'tls_edges.hostports',
            'tls_edges.policy_enabled',
            'tls_edges.policy_value',
            'tls_edges.backend_enabled',
            'tls_edges.backend_id',
            'tls_edges.termination_enabled',
            'tls_edges.termination_at',
            'tls_edges.termination_min_version',
            'tunnel_group_backends.labels',
          ])
          .where('accounts.revoked_at', 'is', null)
          .where((eb) => eb(eb.fn<string>('lower', [eb.ref('tls_edges.hostports')]), 'like', param('pattern')))
          .orderBy('tls_edges.id')
          .limit(10),
      ),
    };
  }

  async findEdgeByHost(host: string): Promise<EdgeRoute | undefined> {
    const wanted = host.toLowerCase();
    if (!HOST.test(wanted)) return undefined;
    const rows = await this.statements.byHost.all({ pattern: `%"${wanted}:%` });
    for (const row of rows) {
      const hostports = JSON.parse(row.hostports) as string[];
      const hostport = hostports.find((entry) => entry.slice(0, entry.lastIndexOf(':')).toLowerCase() === wanted);
      if (hostport === undefined) continue;
      return {
        edgeId: row.id,
        accountId: row.account_id,
        hostport,
        backend:
          row.backend_id === null || row.labels === null
            ? null
            : { enabled: Number(row.backend_enabled) === 1, groupId: row.backend_id, labels: parseLabels(row.labels) },
        policy: trafficPolicyOfRow(row),
        tlsTermination: terminationOfRow(row),
      };
    }
    return undefined;
  }
}
