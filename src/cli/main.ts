#!/usr/bin/env node
import { CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { CliUsageError } from './context.js';
import { buildProgram } from './program.js';

/**
 * Exit codes (README, "CLI"): 0 done; 1 the command failed (an unknown id, an unreachable
 * database, a start-up failure; `policy` documents its own 1); 2 a usage error: an unknown command
 * or flag, a missing argument, an invalid variable or flag value. Errors are one line on stderr,
 * never a stack.
 */
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

// A reader that stops early (`burrow accounts list --json | head -n 1`) is not an error: there is
// nobody left to print to, so stop quietly, as a Unix filter does on SIGPIPE.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  process.stderr.write(`burrow: cannot write the output: ${error.message}\n`);
  process.exit(EXIT_FAILED);
});

buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    if (error instanceof CommanderError) {
      // Commander printed its one line already; --help and --version are not errors.
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    process.stderr.write(`burrow: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = error instanceof ConfigError || error instanceof CliUsageError ? EXIT_USAGE : EXIT_FAILED;
  });
