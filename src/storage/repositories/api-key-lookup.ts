import type { ApiKeyLookup, KeyForAuthentication } from '../../domain/accounts/types.js';
import { param } from '../prepared.js';
import type { Store } from '../types.js';
import { toPrincipal } from './accounts.js';

/** The key, its owner and its account in one compiled query: asked on every uncached request. */
export class SqlApiKeyLookup implements ApiKeyLookup {
  private readonly statements;

  constructor(store: Store) {
    this.statements = {
      find: store.prepare(
        store.db
          .selectFrom('api_keys as k')
          .innerJoin('principals as p', 'p.id', 'k.owner_id')
          .innerJoin('accounts as a', 'a.id', 'k.account_id')
          .select(['k.secret_hash', 'p.id', 'p.account_id', 'p.kind', 'p.name', 'p.admin', 'p.created_at', 'p.revoked_at'])
          .where('k.id', '=', param('id'))
          .where('k.revoked_at', 'is', null)
          .where('p.revoked_at', 'is', null)
          .where('a.revoked_at', 'is', null),
      ),
    };
  }

  async findActiveKey(id: string): Promise<KeyForAuthentication | undefined> {
    const row = await this.statements.find.first({ id });
    return row && { secretHash: row.secret_hash, principal: toPrincipal(row) };
  }
}
