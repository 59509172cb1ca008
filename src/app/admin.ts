import type { Config } from '../config.js';
import { AccountService } from '../domain/accounts/service.js';
import { ownerDirectory } from '../domain/accounts/owners.js';
import { CredentialService } from '../domain/credentials/service.js';
import { openStore, type Store } from '../storage/db.js';
import { StartupError, reason } from './startup-error.js';
import { migrateToLatest, pendingMigrations } from '../storage/migrate.js';
import { allMigrations } from '../storage/migrations/index.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';
import { SqlCredentialRepository } from '../storage/repositories/credentials.js';

/** The services the CLI works with, over one store. */
export interface AdminServices {
  accounts: AccountService;
  credentials: CredentialService;
}

/**
 * Runs `work` with the account service on a migrated store, closing the store afterwards (CLI).
 * `existing`: the command only reads, so a database that does not exist yet is an error rather
 * than a new empty file.
 */
export function withAccountService<T>(
  config: Config,
  work: (accounts: AccountService) => Promise<T>,
  options: { existing?: boolean } = {},
): Promise<T> {
  return withAdminServices(config, (services) => work(services.accounts), options);
}

/** The same with every service the CLI uses. */
export async function withAdminServices<T>(
  config: Config,
  work: (services: AdminServices) => Promise<T>,
  options: { existing?: boolean } = {},
): Promise<T> {
  let store: Store;
  try {
    store = openStore(config.databaseUrl, { poolSize: 2, statementTimeoutMs: config.dbStatementTimeoutMs, mustExist: options.existing });
  } catch (error) {
    throw new StartupError('DATABASE_URL', reason(error));
  }
  try {
    if (options.existing) await mustBeMigrated(store);
    else {
      await migrateToLatest(store).catch((error: unknown) => {
        throw new StartupError('DATABASE_URL', `cannot prepare the database: ${reason(error)}`);
      });
    }
    const accounts = new SqlAccountRepository(store);
    return await work({
      accounts: new AccountService(accounts),
      credentials: new CredentialService(new SqlCredentialRepository(store), ownerDirectory(accounts)),
    });
  } finally {
    await store.close();
  }
}

/** A command that only reads writes no schema either: an empty or older database is an error. */
async function mustBeMigrated(store: Store): Promise<void> {
  let pending: string[];
  try {
    pending = await pendingMigrations(store);
  } catch (error) {
    throw new StartupError('DATABASE_URL', `cannot read the database: ${reason(error)}`);
  }
  if (pending.length === 0) return;
  const pendingAll = pending.length === Object.keys(allMigrations(store.dialect)).length;
  throw new StartupError(
    'DATABASE_URL',
    pendingAll
      ? 'the database has no burrow tables yet: run `burrow migrate` (or start `burrow serve`) first'
      : `the database is ${pending.length} migration(s) behind this burrow: run \`burrow migrate\` first`,
  );
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
