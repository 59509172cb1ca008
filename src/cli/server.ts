import { Command } from 'commander';
import { migrate } from '../app/admin.js';
import { configFor, print } from './context.js';

export function serveCommand(): Command {
  return new Command('serve').description('run the API server (migrates and bootstraps the database first)').action(async (_options, command: Command) => {
    const config = configFor(command);
    // Loaded here so that admin commands do not pay for the whole HTTP stack at start.
    const { start } = await import('../app/start.js');
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
    // SIGHUP: certificate files read again now (CERTIFICATES.md §2), as reverse proxies do
    process.on('SIGHUP', () => {
      server.app.log.info({ signal: 'SIGHUP' }, 'reloading certificates');
      void server.reloadCertificates();
    });
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
}

export function migrateCommand(): Command {
  return new Command('migrate').description('apply pending database migrations and exit').action(async (_options, command: Command) => {
    const applied = await migrate(configFor(command));
    print(applied.length === 0 ? 'The database is up to date.' : `Applied: ${applied.join(', ')}`);
  });
}
