import type { CaptureMode, InspectedRequest, InspectionRepository, InspectionSettings } from '../../domain/inspection/types.js';
import type { Page, PageOf } from '../../domain/paging.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';
import { KeysetPages } from './paging.js';

/** Inspection settings (one row per account that changed them) and captured requests (one JSON row each). */
export class SqlInspectionRepository implements InspectionRepository {
  private readonly statements;

  constructor(private readonly store: Store) {
    const db = store.db;
    const requests = () =>
      db
        .selectFrom('inspected_requests')
        .select(['id', 'exchange'])
        .where('account_id', '=', param('account'))
        .where('endpoint_id', '=', param('endpoint'));
    this.statements = {
      getSettings: store.prepare(db.selectFrom('traffic_inspection_settings').selectAll().where('account_id', '=', param('account'))),
      putSettings: store.prepare(
        db
          .insertInto('traffic_inspection_settings')
          .values({ account_id: param('account'), capture: param('capture'), body_limit_bytes: param<number>('limit'), redact_secrets: param<number>('redact') })
          .onConflict((conflict) =>
            conflict.column('account_id').doUpdateSet((eb) => ({
              capture: eb.ref('excluded.capture'),
              body_limit_bytes: eb.ref('excluded.body_limit_bytes'),
              redact_secrets: eb.ref('excluded.redact_secrets'),
            })),
          ),
      ),
      list: new KeysetPages(store, requests),
      get: store.prepare(requests().where('id', '=', param('id'))),
      any: store.prepare(requests().limit(1)),
      // The id of the oldest request to keep: everything older goes.
      oldestKept: store.prepare(requests().orderBy('id', 'desc').offset(param<number>('offset')).limit(1)),
      trim: store.prepare(
        db
          .deleteFrom('inspected_requests')
          .where('account_id', '=', param('account'))
          .where('endpoint_id', '=', param('endpoint'))
          .where('id', '<', param('oldest')),
      ),
    };
  }

  async getSettings(accountId: string): Promise<InspectionSettings | undefined> {
    const row = await this.statements.getSettings.first({ account: accountId });
    return row && { capture: row.capture as CaptureMode, bodyLimitBytes: Number(row.body_limit_bytes), redactSecrets: Number(row.redact_secrets) === 1 };
  }

  async putSettings(accountId: string, settings: InspectionSettings): Promise<void> {
    await this.statements.putSettings.run({ account: accountId, capture: settings.capture, limit: settings.bodyLimitBytes, redact: settings.redactSecrets ? 1 : 0 });
  }

  /** One multi-row insert per batch (its SQL depends on the batch's length, so it is built here). */
  async insertBatch(requests: readonly InspectedRequest[]): Promise<void> {
    if (requests.length === 0) return;
    await this.store.db
      .insertInto('inspected_requests')
      .values(requests.map((request) => ({ id: request.id, account_id: request.accountId, endpoint_id: request.endpointId, exchange: JSON.stringify(request), created_at: request.createdAt })))
      .execute();
    await this.store.durable();
  }

  async trim(accountId: string, endpointId: string, keep: number): Promise<void> {
    const oldest = await this.statements.oldestKept.first({ account: accountId, endpoint: endpointId, offset: keep - 1 });
    if (oldest) await this.statements.trim.run({ account: accountId, endpoint: endpointId, oldest: oldest.id });
  }

  listPage(accountId: string, endpointId: string, page: Page): Promise<PageOf<InspectedRequest>> {
    return this.statements.list.fetch({ account: accountId, endpoint: endpointId }, page, toRequest);
  }

  async get(accountId: string, endpointId: string, id: string): Promise<InspectedRequest | undefined> {
    const row = await this.statements.get.first({ account: accountId, endpoint: endpointId, id });
    return row && toRequest(row);
  }

  async hasAny(accountId: string, endpointId: string): Promise<boolean> {
    return (await this.statements.any.first({ account: accountId, endpoint: endpointId })) !== undefined;
  }
}

function toRequest(row: { exchange: string }): InspectedRequest {
  return JSON.parse(row.exchange) as InspectedRequest;
}
