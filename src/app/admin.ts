import type { Config } from '../config.js';
import { AccountService } from '../domain/accounts/service.js';
import { openStore, type Store } from '../storage/db.js';
import { StartupError, reason } from './startup-error.js';
import { migrateToLatest } from '../storage/migrate.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';

/**
 * Runs `work` with the account service on a migrated store, closing the store afterwards (CLI).
 * `existing`: the command only reads, so a database that does not exist yet is an error rather
 * than a new empty file.
 */
export async function withAccountService<T>(
  config: Config,
  work: (accounts: AccountService) => Promise<T>,
  options: { existing?: boolean } = {},
): Promise<T> {
  let store: Store;
  try {
    store = openStore(config.databaseUrl, { poolSize: 2, statementTimeoutMs: config.dbStatementTimeoutMs, mustExist: options.existing });
  } catch (error) {
    throw new StartupError('DATABASE_URL', reason(error));
  }
  try {
    await migrateToLatest(store).catch((error: unknown) => {
      throw new StartupError('DATABASE_URL', `cannot prepare the database: ${reason(error)}`);
    });
    return await work(new AccountService(new SqlAccountRepository(store)));
  } finally {
    await store.close();
  }
}

/** Applies pending migrations; resolves with the names of those applied (`burrow migrate`). */
export async function migrate(config: Config): Promise<string[]> {
  let store: Store;
  try {
    store = openStore(config.databaseUrl, { poolSize: 1 });
  } catch (error) {
    throw new StartupError('DATABASE_URL', reason(error));
  }
  try {
    return await migrateToLatest(store).catch((error: unknown) => {
      throw new StartupError('DATABASE_URL', `cannot prepare the database: ${reason(error)}`);
    });
  } finally {
    await store.close();
  }
}
