import { createRequire } from 'node:module';
import { Command } from 'commander';
import { adminCommands } from './admin.js';
import { certsCommand } from './certs.js';
import { policyCommand } from './policy.js';
import { agentConfigCommand } from './agent-config.js';
import { credentialsCommand } from './credentials.js';
import { migrateCommand, serveCommand } from './server.js';

export function buildProgram(): Command {
  const program = new Command()
    .name('burrow')
    .description('Self-hostable tunnel service: the control plane for tunnel credentials and TLS edges, and the data plane agents connect to.')
    .version(packageVersion(), '--version', 'print the version and exit')
    .option('--database-url <url>', 'database to use (default: the DATABASE_URL environment variable, else ./data/burrow.db)');
  program.addCommand(serveCommand());
  program.addCommand(migrateCommand());
  for (const command of adminCommands()) program.addCommand(command);
  program.addCommand(credentialsCommand());
  program.addCommand(agentConfigCommand());
  program.addCommand(policyCommand());
  program.addCommand(certsCommand());
  oneLineErrors(program);
  return program;
}

/** package.json's version (one level above src/ and dist/ alike). */
function packageVersion(): string {
  return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
}

/**
 * Usage errors as one line ("burrow: unknown option '--x' (see burrow <command> --help)"),
 * thrown to main.ts for the exit code instead of commander's own process.exit.
 */
function oneLineErrors(command: Command): void {
  command
    .exitOverride()
    .showHelpAfterError(false)
    .configureOutput({
      outputError: (text, write) => {
        const path = commandPath(command);
        write(`burrow: ${text.trim().replace(/^error: /, '').replace(/\s*\n\s*/g, ' ')} (see ${path} --help)\n`);
      },
    });
  for (const sub of command.commands) oneLineErrors(sub);
}

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}
