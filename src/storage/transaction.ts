import { CompiledQuery, type Compilable, type Transaction } from 'kysely';
import { compileTemplate, type PreparedQuery } from './prepared.js';
import type { SchemaTables } from './schema.js';
import type { Store } from './types.js';

/**
 * Runs `work` in one database transaction, given a Store whose `prepare`d statements run
 * inside it, so a repository built on it (`new SqlXRepository(store)`) takes part unchanged.
 * Statements are compiled per transaction: for rare, multi-statement work (the bootstrap), not
 * for hot paths. Resolves once the commit is durable.
 */
export async function inTransaction<T>(store: Store, work: (transactional: Store) => Promise<T>): Promise<T> {
  const result = await store.db.transaction().execute((trx) => work(transactional(store, trx)));
  await store.durable();
  return result;
}

function transactional(store: Store, trx: Transaction<SchemaTables>): Store {
  const prepare = <Row>(query: Compilable<Row>): PreparedQuery<Row> => {
    const template = compileTemplate(query);
    const execute = (values: Record<string, unknown>) => trx.executeQuery<Row>(CompiledQuery.raw(template.sql, template.bind(values)));
    return {
      all: async (values) => (await execute(values)).rows,
      first: async (values) => (await execute(values)).rows[0],
      run: async (values) => Number((await execute(values)).numAffectedRows ?? 0n),
    };
  };
  return {
    dialect: store.dialect,
    db: trx,
    schema: store.schema,
    prepare,
    // The commit is made durable by inTransaction.
    durable: () => Promise.resolve(),
    observeQueries: (listener) => store.observeQueries(listener),
    ping: () => store.ping(),
    close: () => Promise.reject(new Error('A transaction is closed by its commit, not by close().')),
  };
}
