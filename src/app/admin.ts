import type { Config } from '../config.js';
import { AccountService } from '../domain/accounts/service.js';
import { openStore } from '../storage/db.js';
import { migrateToLatest } from '../storage/migrate.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';

/** Runs `work` with the account service on a migrated store, closing the store afterwards (CLI). */
export async function withAccountService<T>(config: Config, work: (accounts: AccountService) => Promise<T>): Promise<T> {
  const store = openStore(config.databaseUrl, { poolSize: 2, statementTimeoutMs: config.dbStatementTimeoutMs });
  try {
    await migrateToLatest(store);
    return await work(new AccountService(new SqlAccountRepository(store)));
  } finally {
    await store.close();
  }
}

/** Applies pending migrations; resolves with the names of those applied (`burrow migrate`). */
export async function migrate(config: Config): Promise<string[]> {
  const store = openStore(config.databaseUrl, { poolSize: 1 });
  try {
    return await migrateToLatest(store);
  } finally {
    await store.close();
  }
}
