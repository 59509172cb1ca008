import type { AgentCredential, ClaimHolder, EndpointHolding, IngressRepository, JoinedKeeping } from '../../domain/tunnels/ingress.js';
import type { FailoverRepository, InstanceRecord } from '../../domain/tunnels/failover.js';
import type { DataPlaneRepository, Endpoint, SessionCommand, Tunnel, TunnelSession } from '../../domain/tunnels/types.js';
import { inTransaction } from '../transaction.js';
import type { Store } from '../types.js';

/**
 * The data plane's rows (migration 004). Not a hot path (a few statements per agent session and
 * bind), so plain Kysely queries; every row names its instance so a dead instance's rows can be
 * swept by any other.
 */
export class SqlTunnelRepository implements IngressRepository, DataPlaneRepository, FailoverRepository {
  /** PostgreSQL only: the NOTIFY channels of migration 022. */
  readonly watch?: (what: 'commands' | 'credentials', onChange: () => void) => Promise<() => Promise<void>>;

  constructor(private readonly store: Store) {
    const listen = store.listen;
    if (listen) this.watch = (what, onChange) => listen(what === 'commands' ? 'burrow_session_commands' : 'burrow_credentials', onChange);
  }

  private get db() {
    return this.store.db;
  }

  async findCredential(id: string): Promise<AgentCredential | undefined> {
    const row = await this.db
      .selectFrom('credentials')
      .innerJoin('accounts', 'accounts.id', 'credentials.account_id')
      .select(['credentials.id', 'credentials.account_id', 'credentials.owner_id', 'credentials.acl', 'credentials.token_hash'])
      .where('credentials.id', '=', id)
      .where('accounts.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    return { id: row.id, accountId: row.account_id, ownerId: row.owner_id, acl: JSON.parse(row.acl) as string[], tokenHash: row.token_hash };
  }

  async countSessions(accountId: string, exceptId?: string): Promise<number> {
    let query = this.db
      .selectFrom('tunnel_sessions')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('account_id', '=', accountId);
    if (exceptId !== undefined) query = query.where('id', '<>', exceptId);
    const row = await query.executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  async forgetSessionElsewhere(sessionId: string, instanceId: string): Promise<void> {
    await this.db.deleteFrom('tunnels').where('session_id', '=', sessionId).where('instance_id', '<>', instanceId).execute();
    // an endpoint other instances' tunnels joined passes to one of them (CLUSTER.md §2)
    const endpoints = await this.db.selectFrom('endpoints').select(['id', 'instance_id']).where('session_id', '=', sessionId).where('instance_id', '<>', instanceId).execute();
    for (const endpoint of endpoints) await this.releaseEndpoint(endpoint.id, endpoint.instance_id);
  }

  async insertSession(session: TunnelSession): Promise<void> {
    const row = {
      id: session.id,
      account_id: session.accountId,
      credential_id: session.credentialId,
      instance_id: session.instanceId,
      ip: session.ip,
      metadata: session.metadata,
      os: session.os,
      agent_version: session.agentVersion,
      region: session.region,
      started_at: session.startedAt,
      stop_unsupported: session.stopUnsupported,
      restart_unsupported: session.restartUnsupported,
      update_unsupported: session.updateUnsupported,
    };
    // A resumed session keeps its id: its row, if still there, is replaced.
    const { id: _id, ...changes } = row;
    await this.db.insertInto('tunnel_sessions').values(row).onConflict((c) => c.column('id').doUpdateSet(changes)).execute();
    await this.store.durable();
  }

  async deleteSession(id: string, instanceId: string): Promise<void> {
    await this.db.deleteFrom('tunnels').where('session_id', '=', id).where('instance_id', '=', instanceId).execute();
    await this.db.deleteFrom('tunnel_sessions').where('id', '=', id).where('instance_id', '=', instanceId).execute();
  }

  async claim(key: string, accountId: string, instanceId: string, claimedAt: string): Promise<ClaimHolder | undefined> {
    await this.db
      .insertInto('tunnel_claims')
      .values({ key, account_id: accountId, instance_id: instanceId, claimed_at: claimedAt })
      .onConflict((c) => c.column('key').doNothing())
      .execute();
    const row = await this.db.selectFrom('tunnel_claims').select(['account_id', 'instance_id']).where('key', '=', key).executeTakeFirst();
    // Released between the two statements: claim again on the next bind rather than loop here.
    return row ? { accountId: row.account_id, instanceId: row.instance_id } : undefined;
  }

  async release(key: string, accountId: string, instanceId: string): Promise<void> {
    await inTransaction(this.store, async ({ db }) => {
      // locked: a bind joining the name on another instance waits, then sees what became of it
      const held = await this.locked(db.selectFrom('tunnel_claims').select('key').where('key', '=', key).where('account_id', '=', accountId).where('instance_id', '=', instanceId)).executeTakeFirst();
      if (!held) return;
      const heir = await heirOf(db, key, accountId, instanceId);
      if (heir !== undefined) await db.updateTable('tunnel_claims').set({ instance_id: heir }).where('key', '=', key).execute();
      else await db.deleteFrom('tunnel_claims').where('key', '=', key).execute();
    });
  }

  async endpointAt(url: string): Promise<EndpointHolding | undefined> {
    const row = await this.db.selectFrom('endpoints').select(['id', 'instance_id', 'account_id', 'pooling_enabled']).where('url', '=', url).executeTakeFirst();
    return row && { id: row.id, instanceId: row.instance_id, accountId: row.account_id, poolingEnabled: Number(row.pooling_enabled) === 1 };
  }

  async releaseEndpoint(id: string, instanceId: string): Promise<void> {
    await inTransaction(this.store, async ({ db }) => {
      // locked: a bind joining the endpoint on another instance waits, then sees what became of it
      const held = await this.locked(db.selectFrom('endpoints').select('id').where('id', '=', id).where('instance_id', '=', instanceId)).executeTakeFirst();
      if (!held) return;
      const heir = await db.selectFrom('tunnels').select(['instance_id', 'session_id']).where('endpoint_id', '=', id).where('instance_id', '<>', instanceId).orderBy('id').limit(1).executeTakeFirst();
      if (heir) await db.updateTable('endpoints').set({ instance_id: heir.instance_id, session_id: heir.session_id }).where('id', '=', id).execute();
      else await db.deleteFrom('endpoints').where('id', '=', id).execute();
    });
  }

  async keepJoined(endpoint: Endpoint, key: string, claimedAt: string): Promise<JoinedKeeping> {
    try {
      return await inTransaction(this.store, async ({ db }) => {
        const claim = await this.locked(db.selectFrom('tunnel_claims').select('account_id').where('key', '=', key)).executeTakeFirst();
        if (claim && claim.account_id !== endpoint.accountId) return 'name-taken';
        if (!claim) await db.insertInto('tunnel_claims').values({ key, account_id: endpoint.accountId, instance_id: endpoint.instanceId, claimed_at: claimedAt }).execute();
        const kept = await this.locked(db.selectFrom('endpoints').select('id').where('id', '=', endpoint.id)).executeTakeFirst();
        if (kept) return 'kept';
        const written = await db.insertInto('endpoints').values(endpointValues(endpoint)).onConflict((c) => c.column('url').doNothing()).executeTakeFirst();
        if (Number(written.numInsertedOrUpdatedRows ?? 0n) > 0) return 'kept';
        throw new UrlTaken(); // rolls the claim written above back
      });
    } catch (error) {
      if (error instanceof UrlTaken) return 'url-taken';
      throw error;
    }
  }

  /** SELECT … FOR UPDATE on PostgreSQL; SQLite's transactions already run one at a time. */
  private locked<Q extends { forUpdate(): Q }>(query: Q): Q {
    return this.store.dialect === 'postgres' ? query.forUpdate() : query;
  }

  async instanceRecord(instanceId: string): Promise<InstanceRecord | undefined> {
    const row = await this.db.selectFrom('instances').select(['last_seen_at', 'cluster_addr']).where('id', '=', instanceId).executeTakeFirst();
    return row ? { lastSeenAtMs: Number(row.last_seen_at), clusterAddr: row.cluster_addr } : undefined;
  }

  async insertEndpoint(endpoint: Endpoint): Promise<boolean> {
    const result = await this.db
      .insertInto('endpoints')
      .values(endpointValues(endpoint))
      .onConflict((c) => c.column('url').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.db.deleteFrom('endpoints').where('id', '=', id).execute();
  }

  async insertTunnel(tunnel: Tunnel): Promise<void> {
    await this.db
      .insertInto('tunnels')
      .values({
        id: tunnel.id,
        account_id: tunnel.accountId,
        session_id: tunnel.sessionId,
        instance_id: tunnel.instanceId,
        proto: tunnel.proto,
        public_url: tunnel.publicUrl,
        labels: tunnel.labels === null ? null : JSON.stringify(tunnel.labels),
        forwards_to: tunnel.forwardsTo,
        metadata: tunnel.metadata,
        endpoint_id: tunnel.endpointId,
        started_at: tunnel.startedAt,
      })
      .execute();
    await this.store.durable();
  }

  async deleteTunnel(id: string, instanceId: string): Promise<void> {
    await this.db.deleteFrom('tunnels').where('id', '=', id).where('instance_id', '=', instanceId).execute();
  }

  async updateTunnelMetadata(id: string, metadata: string): Promise<void> {
    await this.db.updateTable('tunnels').set({ metadata }).where('id', '=', id).execute();
    await this.store.durable();
  }

  async updateEndpointPolicy(id: string, trafficPolicy: string, updatedAt: string): Promise<void> {
    // incremented in the statement: concurrent patches through any instance each count
    await this.db
      .updateTable('endpoints')
      .set((eb) => ({ traffic_policy: trafficPolicy, updated_at: updatedAt, policy_version: eb(eb.ref('policy_version'), '+', 1) }))
      .where('id', '=', id)
      .execute();
    await this.store.durable();
  }

  async beat(instanceId: string, startedAt: string, nowMs: number, clusterAddr: string | null = null): Promise<void> {
    await this.db
      .insertInto('instances')
      .values({ id: instanceId, started_at: startedAt, last_seen_at: nowMs, cluster_addr: clusterAddr })
      .onConflict((c) => c.column('id').doUpdateSet({ last_seen_at: nowMs, cluster_addr: clusterAddr }))
      .execute();
  }

  async sweep(staleBeforeMs: number): Promise<number> {
    const stale = await this.db.selectFrom('instances').select('id').where('last_seen_at', '<', staleBeforeMs).execute();
    for (const { id } of stale) await this.removeInstance(id);
    return stale.length;
  }

  /**
   * Removes the instance's tunnels, then gives up its endpoints and claims (a drain, or a
   * takeover); those another instance still serves pass to it. Its sessions stay.
   */
  async withdrawRoutes(instanceId: string): Promise<void> {
    await this.db.deleteFrom('tunnels').where('instance_id', '=', instanceId).execute();
    // only a pooled endpoint has other instances' tunnels (a join needs pooling): the rest just go
    const pooled = await this.db.selectFrom('endpoints').select('id').where('instance_id', '=', instanceId).where('pooling_enabled', '=', 1).execute();
    for (const { id } of pooled) await this.releaseEndpoint(id, instanceId);
    await this.db.deleteFrom('endpoints').where('instance_id', '=', instanceId).where('pooling_enabled', '=', 0).execute();
    const claims = await this.db.selectFrom('tunnel_claims').select(['key', 'account_id']).where('instance_id', '=', instanceId).execute();
    for (const claim of claims) await this.release(claim.key, claim.account_id, instanceId);
  }

  async removeInstance(instanceId: string): Promise<number> {
    await this.withdrawRoutes(instanceId);
    await this.db.deleteFrom('session_commands').where('instance_id', '=', instanceId).execute();
    const sessions = await this.db.deleteFrom('tunnel_sessions').where('instance_id', '=', instanceId).executeTakeFirst();
    await this.db.deleteFrom('instances').where('id', '=', instanceId).execute();
    return Number(sessions.numDeletedRows);
  }

  async liveCredentials(ids: readonly string[]): Promise<Map<string, readonly string[]>> {
    const found = new Map<string, readonly string[]>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await this.db
        .selectFrom('credentials')
        .innerJoin('accounts', 'accounts.id', 'credentials.account_id')
        .select(['credentials.id', 'credentials.acl'])
        .where('credentials.id', 'in', ids.slice(i, i + 500))
        .where('accounts.revoked_at', 'is', null)
        .execute();
      for (const row of rows) found.set(row.id, JSON.parse(row.acl) as string[]);
    }
    return found;
  }

  async enqueueCommand(instanceId: string, sessionId: string, command: SessionCommand, nowMs: number): Promise<void> {
    await this.db.insertInto('session_commands').values({ instance_id: instanceId, session_id: sessionId, command, created_at: nowMs }).execute();
    await this.store.durable();
  }

  async takeCommands(instanceId: string): Promise<{ sessionId: string; command: SessionCommand }[]> {
    const rows = await this.db
      .deleteFrom('session_commands')
      .where('instance_id', '=', instanceId)
      .returning(['id', 'session_id', 'command'])
      .execute();
    rows.sort((a, b) => Number(a.id) - Number(b.id));
    return rows.map((row) => ({ sessionId: row.session_id, command: row.command as SessionCommand }));
  }
}

/** keepJoined's rollback: the URL went to another endpoint while the bind joined. */
class UrlTaken extends Error {}

function endpointValues(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    account_id: endpoint.accountId,
    instance_id: endpoint.instanceId,
    url: endpoint.url,
    proto: endpoint.proto,
    host: endpoint.host,
    port: endpoint.port,
    session_id: endpoint.sessionId,
    principal_id: endpoint.principalId,
    traffic_policy: endpoint.trafficPolicy,
    pooling_enabled: endpoint.poolingEnabled ? 1 : 0,
    created_at: endpoint.createdAt,
    updated_at: endpoint.updatedAt,
  };
}

/**
 * Another instance that serves the claimed name or port for the account: one holding an
 * endpoint of it, or one whose tunnels joined such an endpoint (a pooled endpoint spread over
 * instances, whose row another instance holds).
 */
async function heirOf(db: Store['db'], key: string, accountId: string, instanceId: string): Promise<string | undefined> {
  const [kind, value] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
  const tcp = kind === 'tcp';
  const holder = await db
    .selectFrom('endpoints')
    .select('instance_id')
    .where('account_id', '=', accountId)
    .where('instance_id', '<>', instanceId)
    .where('proto', tcp ? '=' : '<>', 'tcp')
    .where(tcp ? 'port' : 'host', '=', tcp ? Number(value) : value)
    .limit(1)
    .executeTakeFirst();
  if (holder) return holder.instance_id;
  const joined = await db
    .selectFrom('tunnels')
    .innerJoin('endpoints', 'endpoints.id', 'tunnels.endpoint_id')
    .select('tunnels.instance_id')
    .where('endpoints.account_id', '=', accountId)
    .where('tunnels.instance_id', '<>', instanceId)
    .where('endpoints.proto', tcp ? '=' : '<>', 'tcp')
    .where(tcp ? 'endpoints.port' : 'endpoints.host', '=', tcp ? Number(value) : value)
    .limit(1)
    .executeTakeFirst();
  return joined?.instance_id;
}
