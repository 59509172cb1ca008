import type { Command } from 'commander';
import { withAccountService, withAdminServices, type AdminServices } from '../app/admin.js';
import { loadConfig, type Config } from '../config.js';
import type { AccountService } from '../domain/accounts/service.js';

/** The configuration, with the global --database-url taking precedence over the environment. */
export function configFor(command: Command): Config {
  const { databaseUrl } = command.optsWithGlobals<{ databaseUrl?: string }>();
  return loadConfig({ databaseUrl });
}

/** Runs `work` with the account service on a migrated store, closing the store afterwards. */
export function withAccounts<T>(command: Command, work: (accounts: AccountService) => Promise<T>): Promise<T> {
  return withAccountService(configFor(command), work);
}

/** The same for a command that only reads: it never creates the database. */
export function readAccounts<T>(command: Command, work: (accounts: AccountService) => Promise<T>): Promise<T> {
  return withAccountService(configFor(command), work, { existing: true });
}

/** Runs `work` with every service the CLI uses; `existing` for a command that only reads. */
export function withServices<T>(command: Command, work: (services: AdminServices) => Promise<T>, options: { existing?: boolean } = {}): Promise<T> {
  return withAdminServices(configFor(command), work, options);
}

/** A flag value the command cannot use: one line, exit 2 (main.ts), as commander's own usage errors. */
export class CliUsageError extends Error {}

export function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Prints rows as aligned columns (`header` false: a later page of the same table), or as JSON lines with --json. */
export function printRows(rows: Record<string, unknown>[], json: boolean, header = true): void {
  if (json) {
    for (const row of rows) print(JSON.stringify(row));
    return;
  }
  if (rows.length === 0) {
    if (header) print('(none)');
    return;
  }
  const columns = Object.keys(rows[0]!);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '-').length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  if (header) print(line(columns));
  for (const row of rows) print(line(columns.map((c) => String(row[c] ?? '-'))));
}

/** `account`, checked to be active, or the only active account when none is named. */
export async function accountOrOnly(service: AccountService, account: string | undefined): Promise<string> {
  const active = (await service.listAccounts()).filter((a) => a.revokedAt === null);
  if (account !== undefined) {
    // an unknown account is a failure, not an empty list
    if (!active.some((a) => a.id === account)) throw new Error(`No active account ${account}.`);
    return account;
  }
  if (active.length !== 1) throw new Error(`There are ${active.length} active accounts; say which one with --account <id>.`);
  return active[0]!.id;
}
