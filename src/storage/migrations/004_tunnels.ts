import type { Kysely } from 'kysely';
import { idType, type MigrationFactory } from './types.js';

/**
 * The data plane's live objects (TUNNELS.md §7): instances, agent sessions, tunnels, endpoints,
 * the claims that keep a hostname or TCP port to one account, and commands for a session held
 * by another instance. Every row names the instance that owns it, so the rows of an instance
 * that died without cleaning up can be swept.
 */
export const tunnels: MigrationFactory = (dialect) => ({
  async up(db: Kysely<unknown>) {
    const id = idType(dialect);
    await db.schema
      .createTable('instances')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('started_at', 'text', (c) => c.notNull())
      /** Unix milliseconds of the last heartbeat. */
      .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('tunnel_sessions')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull())
      .addColumn('credential_id', id, (c) => c.notNull())
      .addColumn('instance_id', id, (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('os', 'text', (c) => c.notNull())
      .addColumn('agent_version', 'text', (c) => c.notNull())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('stop_unsupported', 'text')
      .addColumn('restart_unsupported', 'text')
      .addColumn('update_unsupported', 'text')
      .execute();
    await db.schema.createIndex('tunnel_sessions_account_id').on('tunnel_sessions').columns(['account_id', 'id']).execute();
    await db.schema.createIndex('tunnel_sessions_credential_id').on('tunnel_sessions').columns(['credential_id']).execute();
    await db.schema.createIndex('tunnel_sessions_instance_id').on('tunnel_sessions').columns(['instance_id']).execute();

    await db.schema
      .createTable('tunnels')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull())
      .addColumn('session_id', id, (c) => c.notNull())
      .addColumn('instance_id', id, (c) => c.notNull())
      .addColumn('proto', 'text', (c) => c.notNull())
      .addColumn('public_url', 'text')
      /** JSON object of a labeled tunnel's labels, else null. */
      .addColumn('labels', 'text')
      .addColumn('forwards_to', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('endpoint_id', id)
      .addColumn('started_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tunnels_account_id').on('tunnels').columns(['account_id', 'id']).execute();
    await db.schema.createIndex('tunnels_session_id').on('tunnels').columns(['session_id']).execute();
    await db.schema.createIndex('tunnels_instance_id').on('tunnels').columns(['instance_id']).execute();

    await db.schema
      .createTable('endpoints')
      .addColumn('id', id, (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull())
      .addColumn('instance_id', id, (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull().unique())
      .addColumn('proto', 'text', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('session_id', id, (c) => c.notNull())
      .addColumn('principal_id', id, (c) => c.notNull())
      .addColumn('traffic_policy', 'text', (c) => c.notNull())
      .addColumn('pooling_enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('endpoints_account_id').on('endpoints').columns(['account_id', 'id']).execute();
    await db.schema.createIndex('endpoints_instance_id').on('endpoints').columns(['instance_id']).execute();

    // A hostname (`host:<name>`) or TCP port (`tcp:<port>`) belongs to one account at a time.
    await db.schema
      .createTable('tunnel_claims')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('account_id', id, (c) => c.notNull())
      .addColumn('instance_id', id, (c) => c.notNull())
      .addColumn('claimed_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tunnel_claims_instance_id').on('tunnel_claims').columns(['instance_id']).execute();

    await db.schema
      .createTable('session_commands')
      .addColumn('id', 'integer', (c) => (dialect === 'postgres' ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey().autoIncrement()))
      .addColumn('instance_id', id, (c) => c.notNull())
      .addColumn('session_id', id, (c) => c.notNull())
      .addColumn('command', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('session_commands_instance_id').on('session_commands').columns(['instance_id', 'id']).execute();
  },
});
