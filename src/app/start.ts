import type { Config } from '../config.js';
import { AccountService } from '../domain/accounts/service.js';
import type { HttpApp } from '../http/app.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { openStore, type Store } from '../storage/db.js';
import { migrateToLatest } from '../storage/migrate.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';
import { buildApp } from './build.js';
import { httpListener, type Listener } from './listeners.js';

export interface RunningServer {
  app: HttpApp;
  store: Store;
  address: string;
  /** Stops accepting, lets in-flight requests finish, then closes the database. */
  stop(): Promise<void>;
}

/** Opens and migrates the store, bootstraps an empty database, and listens. */
export async function start(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  const store = openStore(config.databaseUrl, {
    poolSize: config.dbPoolSize,
    statementTimeoutMs: config.dbStatementTimeoutMs,
  });
  try {
    const applied = await migrateToLatest(store);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    await bootstrap(store, config, logger);
  } catch (error) {
    await store.close();
    throw error;
  }

  const app = await buildApp({ config, store, logger });
  // The data plane's listeners (src/tunnels/) are added to this list.
  const listeners: Listener[] = [httpListener(app, config)];
  const addresses: string[] = [];
  try {
    for (const listener of listeners) addresses.push(await listener.listen());
  } catch (error) {
    await Promise.allSettled(listeners.map((listener) => listener.close(0)));
    await store.close();
    throw error;
  }
  const address = addresses[0]!;
  logger.info({ address, database: store.dialect }, 'burrow is listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Phase 1: every listener stops looking ready; phase 2: all drain together; then the store.
      for (const listener of listeners) listener.beginShutdown();
      try {
        await Promise.all(listeners.map((listener) => listener.close(config.shutdownGraceMs)));
      } finally {
        await store.close();
      }
    })());
  return { app, store, address, stop };
}

async function bootstrap(store: Store, config: Config, logger: Logger): Promise<void> {
  const result = await new AccountService(new SqlAccountRepository(store)).bootstrap(config.bootstrapApiKey);
  if (!result) return;
  logger.info({ account_id: result.account.id, user_id: result.admin.id, api_key_id: result.key.id }, 'bootstrapped an empty database');
  if (result.generatedSecret !== undefined) {
    process.stderr.write(
      `\nburrow: created the first admin user (${result.admin.id}) and its API key:\n\n    ${result.generatedSecret}\n\n` +
        'Store it now: it will not be shown again. Send it as "Authorization: Bearer <key>".\n\n',
    );
  }
}
