import { Command } from 'commander';
import { adminCommands } from './admin.js';
import { policyCommand } from './policy.js';
import { migrateCommand, serveCommand } from './server.js';

export function buildProgram(): Command {
  const program = new Command()
    .name('burrow')
    .description('Self-hostable control plane for tunnel credentials and TLS edges.')
    .option('--database-url <url>', 'database to use (default: the DATABASE_URL environment variable, else ./data/burrow.db)')
    .showHelpAfterError();
  program.addCommand(serveCommand());
  program.addCommand(migrateCommand());
  for (const command of adminCommands()) program.addCommand(command);
  program.addCommand(policyCommand());
  return program;
}
