import { Command } from 'commander';
import type { Account, ApiKey, Principal } from '../domain/accounts/types.js';
import { CliUsageError, accountOrOnly, print, printRows, readAccounts, withAccounts } from './context.js';

/** accounts, users, bots and api-keys: create, list, revoke (and the admin flag). */
export function adminCommands(): Command[] {
  return [accountsCommand(), principalCommand('user'), principalCommand('bot'), apiKeysCommand()];
}

function accountsCommand(): Command {
  const accounts = new Command('accounts').description('manage accounts (tenants)');
  accounts
    .command('create')
    .description('create an account')
    .requiredOption('--name <name>', 'a name for the account', displayName)
    .option('--json', 'print JSON')
    .action(async (options: { name: string; json?: boolean }, command: Command) => {
      const account = await withAccounts(command, (service) => service.createAccount(options.name));
      print(options.json ? JSON.stringify(accountRow(account)) : `Created account ${account.id} (${account.name}).`);
    });
  accounts
    .command('list')
    .description('list accounts')
    .option('--json', 'print JSON lines')
    .action(async (options: { json?: boolean }, command: Command) => {
      const rows = await readAccounts(command, (service) => service.listAccounts());
      printRows(rows.map(accountRow), !!options.json);
    });
  accounts
    .command('revoke <id>')
    .description('revoke an account: every API key of it stops working')
    .action(async (id: string, _options, command: Command) => {
      await withAccounts(command, (service) => service.revokeAccount(id));
      print(`Revoked account ${id}.`);
    });
  return accounts;
}

function principalCommand(kind: 'user' | 'bot'): Command {
  const noun = kind === 'user' ? 'users' : 'bots';
  const group = new Command(noun).description(`manage ${kind === 'user' ? 'users' : 'bot users'} of an account`);
  group
    .command('create')
    .description(`create a ${kind}`)
    .requiredOption('--name <name>', `a name for the ${kind}`, displayName)
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .option('--admin', 'may create credentials owned by others', false)
    .option('--json', 'print JSON')
    .action(async (options: { name: string; account?: string; admin: boolean; json?: boolean }, command: Command) => {
      const principal = await withAccounts(command, async (service) =>
        service.createPrincipal(await accountOrOnly(service, options.account), kind, options.name, options.admin),
      );
      print(
        options.json
          ? JSON.stringify(principalRow(principal))
          : `Created ${kind} ${principal.id} (${principal.name})${principal.admin ? ' as an admin' : ''}.`,
      );
    });
  group
    .command('list')
    .description(`list ${noun}`)
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .option('--json', 'print JSON lines')
    .action(async (options: { account?: string; json?: boolean }, command: Command) => {
      const rows = await readAccounts(command, async (service) => service.listPrincipals(await accountOrOnly(service, options.account)));
      printRows(rows.filter((p) => p.kind === kind).map(principalRow), !!options.json);
    });
  group
    .command('set-admin <id>')
    .description(`grant (--admin) or withdraw (--no-admin) the admin flag`)
    .option('--admin', 'make an admin')
    .option('--no-admin', 'make not an admin')
    .action(async (id: string, options: { admin?: boolean }, command: Command) => {
      if (options.admin === undefined) command.error('error: say --admin or --no-admin', { exitCode: 2, code: 'burrow.missingFlag' });
      await withAccounts(command, (service) => service.setAdmin(id, options.admin!, kind));
      print(`${id} is ${options.admin ? 'now' : 'no longer'} an admin.`);
    });
  group
    .command('revoke <id>')
    .description(`revoke a ${kind}: its API keys stop working`)
    .action(async (id: string, _options, command: Command) => {
      await withAccounts(command, (service) => service.revokePrincipal(id, kind));
      print(`Revoked ${kind} ${id}.`);
    });
  return group;
}

function apiKeysCommand(): Command {
  const keys = new Command('api-keys').description('manage API keys');
  keys
    .command('create')
    .description('create an API key for a user or bot; the key is printed once')
    .requiredOption('--owner <id>', 'the usr_ or bot_ id the key acts as')
    .option('--description <text>', 'what the key is for', '')
    .option('--json', 'print JSON (includes the key)')
    .action(async (options: { owner: string; description: string; json?: boolean }, command: Command) => {
      const { key, secret } = await withAccounts(command, (service) => service.createApiKey(options.owner, options.description));
      if (options.json) print(JSON.stringify({ ...apiKeyRow(key), key: secret }));
      else {
        process.stderr.write(`Created API key ${key.id} for ${key.ownerId}. It will not be shown again:\n`);
        print(secret);
      }
    });
  keys
    .command('list')
    .description('list API keys (never their secrets)')
    .option('--account <id>', 'only this account (default: every account; see account_id)')
    .option('--json', 'print JSON lines')
    .action(async (options: { account?: string; json?: boolean }, command: Command) => {
      const rows = await readAccounts(command, async (service) => {
        // an unknown account is a failure, not an empty list (a revoked one still has its keys listed)
        if (options.account !== undefined && !(await service.listAccounts()).some((a) => a.id === options.account)) {
          throw new Error(`No account ${options.account}.`);
        }
        return service.listApiKeys(options.account);
      });
      printRows(rows.map(apiKeyRow), !!options.json);
    });
  keys
    .command('revoke <id>')
    .description('revoke an API key: it stops working within one second on every instance')
    .action(async (id: string, _options, command: Command) => {
      await withAccounts(command, (service) => service.revokeApiKey(id));
      print(`Revoked API key ${id}.`);
    });
  return keys;
}

/** A name people will read in lists: some visible text, one line, at most 255 characters. */
function displayName(value: string): string {
  const name = value.trim();
  if (name === '' || name.length > 255 || /\p{Cc}/u.test(name)) {
    throw new CliUsageError('--name must be 1 to 255 characters of one line, not only spaces.');
  }
  return name;
}

// One shape per resource for `create --json` and `list`, in the API's snake_case.
function accountRow(a: Account) {
  return { id: a.id, name: a.name, created_at: a.createdAt, revoked_at: a.revokedAt };
}

function principalRow(p: Principal) {
  return { id: p.id, account_id: p.accountId, kind: p.kind, name: p.name, admin: p.admin, created_at: p.createdAt, revoked_at: p.revokedAt };
}

function apiKeyRow(k: ApiKey) {
  return {
    id: k.id,
    account_id: k.accountId,
    owner_id: k.ownerId,
    prefix: k.displayPrefix,
    description: k.description,
    created_at: k.createdAt,
    revoked_at: k.revokedAt,
  };
}
