import type { ActiveConsoleSession, ConsoleSessionRecord, ConsoleSessionRepository } from '../../domain/console/sessions.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';
import { toPrincipal } from './accounts.js';

/** Console sessions; the lookup joins the session's API key, so a revoked key ends it at once. */
export class SqlConsoleSessionRepository implements ConsoleSessionRepository {
  private readonly statements;

  constructor(store: Store) {
    const db = store.db;
    this.statements = {
      insert: store.prepare(
        db.insertInto('console_sessions').values({
          id_hash: param('idHash'),
          api_key_id: param('apiKeyId'),
          csrf_token: param('csrfToken'),
          created_at: param('createdAt'),
          last_used_ms: param<number>('lastUsedMs'),
        }),
      ),
      find: store.prepare(
        db
          .selectFrom('console_sessions as s')
          .innerJoin('api_keys as k', 'k.id', 's.api_key_id')
          .innerJoin('principals as p', 'p.id', 'k.owner_id')
          .innerJoin('accounts as a', 'a.id', 'k.account_id')
          .select(['s.csrf_token', 's.last_used_ms', 'p.id', 'p.account_id', 'p.kind', 'p.name', 'p.admin', 'p.created_at', 'p.revoked_at'])
          .where('s.id_hash', '=', param('idHash'))
          .where('k.revoked_at', 'is', null)
          .where('p.revoked_at', 'is', null)
          .where('a.revoked_at', 'is', null),
      ),
      touch: store.prepare(db.updateTable('console_sessions').set({ last_used_ms: param<number>('lastUsedMs') }).where('id_hash', '=', param('idHash'))),
      delete: store.prepare(db.deleteFrom('console_sessions').where('id_hash', '=', param('idHash'))),
      deleteIdle: store.prepare(db.deleteFrom('console_sessions').where('last_used_ms', '<', param<number>('before'))),
    };
  }

  async insert(session: ConsoleSessionRecord): Promise<void> {
    await this.statements.insert.run({ ...session });
  }

  async findActive(idHash: string): Promise<ActiveConsoleSession | undefined> {
    const row = await this.statements.find.first({ idHash });
    return row && { csrfToken: row.csrf_token, lastUsedMs: Number(row.last_used_ms), principal: toPrincipal(row) };
  }

  async touch(idHash: string, lastUsedMs: number): Promise<void> {
    await this.statements.touch.run({ idHash, lastUsedMs });
  }

  async delete(idHash: string): Promise<void> {
    await this.statements.delete.run({ idHash });
  }

  async deleteIdleSince(before: number): Promise<void> {
    await this.statements.deleteIdle.run({ before });
  }
}
