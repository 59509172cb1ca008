import type { ExpressionBuilder } from 'kysely';
import type { Page, PageOf } from '../../domain/paging.js';
import type { BindProto } from '../../domain/tunnels/binds.js';
import type { ListedEndpoint, ListedTunnel, LiveObjectReader } from '../../domain/live-objects/types.js';
import type { TunnelSession } from '../../domain/tunnels/types.js';
import { param } from '../prepared.js';
import type { EndpointsTable, SchemaTables, TunnelSessionsTable, TunnelsTable } from '../schema.js';
import type { Store } from '../types.js';
import { parseLabelsOrNull } from './labels.js';
import { KeysetPages } from './paging.js';

type SessionRow = Omit<TunnelSessionsTable, 'account_id'>;
type TunnelRow = Omit<TunnelsTable, 'account_id'> & { region: string | null };
type EndpointRow = Omit<EndpointsTable, 'account_id' | 'policy_version'> & {
  region: string | null;
  tunnel_id: string | null;
  tunnel_metadata: string | null;
  tunnel_forwards_to: string | null;
};

const SESSION_COLUMNS = [
  'id',
  'credential_id',
  'instance_id',
  'ip',
  'metadata',
  'os',
  'agent_version',
  'region',
  'started_at',
  'stop_unsupported',
  'restart_unsupported',
  'update_unsupported',
] as const;
const TUNNEL_COLUMNS = ['id', 'session_id', 'instance_id', 'proto', 'public_url', 'labels', 'forwards_to', 'metadata', 'endpoint_id', 'started_at'] as const;
const ENDPOINT_COLUMNS = [
  'id',
  'instance_id',
  'url',
  'proto',
  'host',
  'port',
  'session_id',
  'principal_id',
  'traffic_policy',
  'pooling_enabled',
  'created_at',
  'updated_at',
] as const;

/**
 * The REST API's read side of the data plane's rows (migration 004), in the repository style of
 * accounts.ts. What a tunnel or endpoint shows of its session or serving tunnel is read with
 * correlated subqueries rather than joins, so the one table of each list keeps `id` unambiguous
 * for KeysetPages; the subqueries stay within the account (its `(account_id, id)` index).
 */
export class SqlLiveObjectReader implements LiveObjectReader {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    const sessions = () => db.selectFrom('tunnel_sessions').select(SESSION_COLUMNS).where('account_id', '=', param('account'));
    const tunnels = () =>
      db
        .selectFrom('tunnels')
        .select(TUNNEL_COLUMNS)
        .select((eb) =>
          eb
            .selectFrom('tunnel_sessions as s')
            .select('s.region')
            .whereRef('s.id', '=', 'tunnels.session_id')
            .whereRef('s.account_id', '=', 'tunnels.account_id')
            .as('region'),
        )
        .where('account_id', '=', param('account'));
    // The tunnel serving an endpoint: the oldest of its pool.
    const servingTunnel = (eb: ExpressionBuilder<SchemaTables, 'endpoints'>, column: 'id' | 'metadata' | 'forwards_to') =>
      eb
        .selectFrom('tunnels as t')
        .select(`t.${column}` as const)
        .whereRef('t.account_id', '=', 'endpoints.account_id')
        .whereRef('t.endpoint_id', '=', 'endpoints.id')
        .orderBy('t.id')
        .limit(1);
    const endpoints = () =>
      db
        .selectFrom('endpoints')
        .select(ENDPOINT_COLUMNS)
        .select((eb) => [
          eb
            .selectFrom('tunnel_sessions as s')
            .select('s.region')
            .whereRef('s.id', '=', 'endpoints.session_id')
            .whereRef('s.account_id', '=', 'endpoints.account_id')
            .as('region'),
          servingTunnel(eb, 'id').as('tunnel_id'),
          servingTunnel(eb, 'metadata').as('tunnel_metadata'),
          servingTunnel(eb, 'forwards_to').as('tunnel_forwards_to'),
        ])
        .where('account_id', '=', param('account'));
    this.statements = {
      getSession: store.prepare(sessions().where('id', '=', param('id'))),
      listSessions: new KeysetPages(store, sessions),
      getTunnel: store.prepare(tunnels().where('id', '=', param('id'))),
      listTunnels: new KeysetPages(store, tunnels),
      getEndpoint: store.prepare(endpoints().where('id', '=', param('id'))),
      listEndpoints: new KeysetPages(store, endpoints),
    };
  }

  async getSession(accountId: string, id: string): Promise<TunnelSession | undefined> {
    const row = await this.statements.getSession.first({ account: accountId, id });
    return row && toSession(row, accountId);
  }

  listSessions(accountId: string, page: Page): Promise<PageOf<TunnelSession>> {
    return this.statements.listSessions.fetch({ account: accountId }, page, (row) => toSession(row, accountId));
  }

  async getTunnel(accountId: string, id: string): Promise<ListedTunnel | undefined> {
    const row = await this.statements.getTunnel.first({ account: accountId, id });
    return row && toTunnel(row, accountId);
  }

  listTunnels(accountId: string, page: Page): Promise<PageOf<ListedTunnel>> {
    return this.statements.listTunnels.fetch({ account: accountId }, page, (row) => toTunnel(row, accountId));
  }

  async getEndpoint(accountId: string, id: string): Promise<ListedEndpoint | undefined> {
    const row = await this.statements.getEndpoint.first({ account: accountId, id });
    return row && toEndpoint(row, accountId);
  }

  listEndpoints(accountId: string, page: Page): Promise<PageOf<ListedEndpoint>> {
    return this.statements.listEndpoints.fetch({ account: accountId }, page, (row) => toEndpoint(row, accountId));
  }
}

function toSession(row: SessionRow, accountId: string): TunnelSession {
  return {
    id: row.id,
    accountId,
    credentialId: row.credential_id,
    instanceId: row.instance_id,
    ip: row.ip,
    metadata: row.metadata,
    os: row.os,
    agentVersion: row.agent_version,
    region: row.region,
    startedAt: row.started_at,
    stopUnsupported: row.stop_unsupported,
    restartUnsupported: row.restart_unsupported,
    updateUnsupported: row.update_unsupported,
  };
}

function toTunnel(row: TunnelRow, accountId: string): ListedTunnel {
  return {
    id: row.id,
    accountId,
    sessionId: row.session_id,
    instanceId: row.instance_id,
    proto: row.proto as BindProto | '',
    publicUrl: row.public_url,
    labels: parseLabelsOrNull(row.labels),
    forwardsTo: row.forwards_to,
    metadata: row.metadata,
    startedAt: row.started_at,
    endpointId: row.endpoint_id,
    // The session row goes with its tunnels; a tunnel read between the two deletions shows ''.
    region: row.region ?? '',
  };
}

function toEndpoint(row: EndpointRow, accountId: string): ListedEndpoint {
  return {
    id: row.id,
    accountId,
    instanceId: row.instance_id,
    url: row.url,
    proto: row.proto as BindProto,
    host: row.host,
    port: Number(row.port),
    sessionId: row.session_id,
    principalId: row.principal_id,
    trafficPolicy: row.traffic_policy,
    poolingEnabled: Number(row.pooling_enabled) !== 0,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    region: row.region ?? '',
    tunnelId: row.tunnel_id,
    metadata: row.tunnel_metadata ?? '',
    forwardsTo: row.tunnel_forwards_to ?? '',
  };
}
