import { after, before } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import type { Endpoint } from '../../src/domain/tunnels/types.js';
import type { Store } from '../../src/storage/db.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { createTestApp, type TestApp } from './app.js';

/** The edge settings and limits an `AgentIngress` over the tunnel tables is built with. */
export const TABLES_EDGE = { edgeDomain: 'burrow.localhost', publicHost: '127.0.0.1', tcpPorts: [{ first: 20000, last: 20009 }], region: 'local', httpPort: 80, tlsPort: 443 };
export const TABLES_LIMITS = { maxSessionsPerAccount: 0, maxEndpointsPerSession: 0, maxPolicyRules: 10 };

export interface TunnelTables {
  readonly store: Store;
  readonly repo: SqlTunnelRepository;
  /** The claim row of `key` (`host:…`, `tcp:…`), or undefined. */
  claimRow(key: string): Promise<{ account_id: string; instance_id: string } | undefined>;
}

/**
 * The tunnel tables of the pass's store (in-memory SQLite, or a fresh PostgreSQL schema with
 * TEST_DATABASE_URL), opened before the file's tests and closed after them: call it at the top level.
 */
export function tunnelTables(): TunnelTables {
  let app: TestApp | undefined;
  let repo: SqlTunnelRepository | undefined;
  before(async () => {
    app = await createTestApp();
    repo = new SqlTunnelRepository(app.store);
  });
  after(() => app?.close());
  const opened = () => {
    if (!app || !repo) throw new Error('the tunnel tables are opened in a before hook: use them in tests');
    return { store: app.store, repo };
  };
  return {
    get store() {
      return opened().store;
    },
    get repo() {
      return opened().repo;
    },
    claimRow: (key) => opened().store.db.selectFrom('tunnel_claims').select(['account_id', 'instance_id']).where('key', '=', key).executeTakeFirst(),
  };
}

/** A new endpoint row of `instanceId` for `host`: https on 443 (its URL `https://host`) unless told otherwise. */
export function endpointOf(
  instanceId: string,
  accountId: string,
  host: string,
  { proto = 'https', port = 443, url = `https://${host}`, poolingEnabled = false }: { proto?: Endpoint['proto']; port?: number; url?: string; poolingEnabled?: boolean } = {},
): Endpoint {
  const now = new Date().toISOString();
  return { id: newId('ep').id, accountId, instanceId, url, proto, host, port, sessionId: newBareId('ts'), principalId: newBareId('usr'), trafficPolicy: '', poolingEnabled, createdAt: now, updatedAt: now };
}
