import { Command } from 'commander';
import { openStore } from '../storage/db.js';
import { migrateToLatest } from '../storage/migrate.js';
import { configFor, print } from './context.js';

export function serveCommand(): Command {
  return new Command('serve').description('run the API server (migrates and bootstraps the database first)').action(async (_options, command: Command) => {
    const config = configFor(command);
    // Loaded here so that admin commands do not pay for the whole HTTP stack at start.
    const { start } = await import('../server/start.js');
    const server = await start(config);
    const shutdown = (signal: string) => {
      server.app.log.info({ signal }, 'shutting down');
      server.stop().then(
        () => process.exit(0),
        (error: unknown) => {
          server.app.log.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
}

export function migrateCommand(): Command {
  return new Command('migrate').description('apply pending database migrations and exit').action(async (_options, command: Command) => {
    const config = configFor(command);
    const store = openStore(config.databaseUrl, { poolSize: 1 });
    try {
      const applied = await migrateToLatest(store);
      print(applied.length === 0 ? 'The database is up to date.' : `Applied: ${applied.join(', ')}`);
    } finally {
      await store.close();
    }
  });
}
