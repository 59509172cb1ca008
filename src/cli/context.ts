import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { AccountService } from '../domain/accounts/service.js';
import { openStore, type Store } from '../storage/db.js';
import { migrateToLatest } from '../storage/migrate.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';

/** The configuration, with the global --database-url taking precedence over the environment. */
export function configFor(command: Command): Config {
  const { databaseUrl } = command.optsWithGlobals<{ databaseUrl?: string }>();
  return loadConfig(databaseUrl ? { ...process.env, DATABASE_URL: databaseUrl } : process.env);
}

/** Runs `work` with the account service on a migrated store, closing the store afterwards. */
export async function withAccounts<T>(command: Command, work: (accounts: AccountService, store: Store) => Promise<T>): Promise<T> {
  const config = configFor(command);
  const store = openStore(config.databaseUrl, { poolSize: 2, statementTimeoutMs: config.dbStatementTimeoutMs });
  try {
    await migrateToLatest(store);
    return await work(new AccountService(SqlAccountRepository.of(store)), store);
  } finally {
    await store.close();
  }
}

export function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Prints rows as aligned columns, or as JSON lines with --json. */
export function printRows(rows: Record<string, unknown>[], json: boolean): void {
  if (json) {
    for (const row of rows) print(JSON.stringify(row));
    return;
  }
  if (rows.length === 0) {
    print('(none)');
    return;
  }
  const columns = Object.keys(rows[0]!);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '-').length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  print(line(columns));
  for (const row of rows) print(line(columns.map((c) => String(row[c] ?? '-'))));
}
