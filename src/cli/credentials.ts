import { Command, Option } from 'commander';
import type { AdminServices } from '../app/admin.js';
import type { AccountService } from '../domain/accounts/service.js';
import type { Principal } from '../domain/accounts/types.js';
import type { Credential, CredentialChanges } from '../domain/credentials/types.js';
import { ApiError } from '../domain/errors.js';
import { CliUsageError, accountOrOnly, print, printRows, withServices } from './context.js';

/**
 * `burrow credentials create|list|get|update|delete`: tunnel authtokens without an API key, through
 * the same domain service as the REST API (SPEC §5), so the same rules and messages apply. The CLI
 * acts as an admin of the account (`--account`, default the only active one).
 */
export function credentialsCommand(): Command {
  const credentials = new Command('credentials').description('manage tunnel credentials (the authtokens agents connect with)');
  credentials
    .command('create')
    .description('create a credential; its authtoken is printed once (stdout), the rest on stderr')
    .option('--description <text>', 'what the credential is for')
    .option('--metadata <text>', 'arbitrary text kept with it')
    .addOption(aclOption('none: it may bind anything'))
    .option('--owner <id>', "the usr_ or bot_ id that owns it (default: the account's only admin user)")
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .option('--json', 'print JSON (includes the token)')
    .action(async (options: CreateOptions, command: Command) => {
      const { credential, token } = await run(command, false, async ({ accounts, credentials }) => {
        const caller = await operator(accounts, options.account);
        const ownerId = options.owner ? options.owner : await onlyAdminUser(accounts, caller.accountId);
        return credentials.create(caller, { description: options.description, metadata: options.metadata, acl: options.acl || [], ownerId });
      });
      if (options.json) print(JSON.stringify({ ...credentialRow(credential), token }));
      else {
        process.stderr.write(`Created credential ${credential.id} owned by ${credential.ownerId}. Its authtoken will not be shown again:\n`);
        print(token);
      }
    });
  credentials
    .command('list')
    .description("list an account's credentials, newest first (never their tokens)")
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .option('--json', 'print JSON lines')
    .action(async (options: { account?: string; json?: boolean }, command: Command) => {
      await run(command, true, async ({ accounts, credentials }) => {
        const caller = await operator(accounts, options.account);
        // page by page, so a million credentials never sit in memory at once
        for (let beforeId: string | undefined, first = true; ; first = false) {
          const page = await credentials.list(caller, beforeId, 100);
          if (page.items.length > 0 || first) {
            const rows = page.items.map((row) => (options.json ? credentialRow(row) : { ...credentialRow(row), acl: row.acl.join(' ') || '(any)' }));
            printRows(rows, !!options.json, first);
          }
          if (!page.hasMore || page.items.length === 0) return;
          beforeId = page.items[page.items.length - 1]!.id;
        }
      });
    });
  credentials
    .command('get <id>')
    .description('show one credential')
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { account?: string; json?: boolean }, command: Command) => {
      const credential = await run(command, true, async ({ accounts, credentials }) => credentials.get(await operator(accounts, options.account), id), id);
      show(credential, !!options.json);
    });
  credentials
    .command('update <id>')
    .description('change the description, metadata or ACL (--acl replaces the whole list, --no-acl empties it)')
    .option('--description <text>', 'a new description')
    .option('--metadata <text>', 'new metadata')
    .addOption(aclOption('they replace the whole list'))
    // defined after --acl, so it leaves --acl's default alone: false only when given
    .addOption(new Option('--no-acl', 'an empty ACL: the token may bind anything'))
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .option('--json', 'print JSON')
    .action(async (id: string, options: UpdateOptions, command: Command) => {
      const changes: CredentialChanges = {};
      if (options.description !== undefined) changes.description = options.description;
      if (options.metadata !== undefined) changes.metadata = options.metadata;
      if (options.acl !== undefined) changes.acl = options.acl || [];
      if (Object.keys(changes).length === 0) throw new CliUsageError('say what to change: --description, --metadata, --acl or --no-acl.');
      const credential = await run(command, false, async ({ accounts, credentials }) => credentials.update(await operator(accounts, options.account), id, changes), id);
      show(credential, !!options.json);
    });
  credentials
    .command('delete <id>')
    .description('delete a credential: its agents are disconnected within a second')
    .option('--account <id>', 'the account (default: the only one, when there is only one)')
    .action(async (id: string, options: { account?: string }, command: Command) => {
      await run(command, false, async ({ accounts, credentials }) => credentials.delete(await operator(accounts, options.account), id), id);
      print(`Deleted credential ${id}.`);
    });
  return credentials;
}

interface CreateOptions {
  description?: string;
  metadata?: string;
  /** `false` from --no-acl. */
  acl?: string[] | false;
  owner?: string;
  account?: string;
  json?: boolean;
}

type UpdateOptions = Omit<CreateOptions, 'owner'>;

function aclOption(help: string): Option {
  return new Option('--acl <rule>', `an ACL rule such as bind:*.example.com; repeat for more (${help})`).argParser(
    (rule: string, previous: string[] | false | undefined) => [...(previous || []), rule],
  );
}

/**
 * Runs the work, turning the domain's errors into the CLI's: a refused value (the API's 400) is a
 * usage error, exit 2, with the API's code and message; a missing credential names the id.
 */
async function run<T>(command: Command, readOnly: boolean, work: (services: AdminServices) => Promise<T>, id?: string): Promise<T> {
  try {
    return await withServices(command, work, { existing: readOnly });
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.statusCode === 404 && id !== undefined) throw new Error(`No credential ${id} in this account.`);
    const message = error.errorCode ? `${error.errorCode}: ${error.message}` : error.message;
    throw error.statusCode === 400 ? new CliUsageError(message) : new Error(message);
  }
}

/** The CLI as an admin of the account: it may name any active user or bot as the owner. */
async function operator(accounts: AccountService, account: string | undefined): Promise<Principal> {
  // id '' is nobody's: the service then checks every owner named (ERR_NGROK_634 for a stranger)
  return { id: '', accountId: await accountOrOnly(accounts, account), kind: 'user', name: 'burrow CLI', admin: true, createdAt: '', revokedAt: null };
}

async function onlyAdminUser(accounts: AccountService, accountId: string): Promise<string> {
  const admins = (await accounts.listPrincipals(accountId)).filter((p) => p.kind === 'user' && p.admin && p.revokedAt === null);
  if (admins.length !== 1) throw new CliUsageError(`The account has ${admins.length} active admin users; say who owns the credential with --owner <usr_… or bot_…>.`);
  return admins[0]!.id;
}

function show(credential: Credential, json: boolean): void {
  if (json) return print(JSON.stringify(credentialRow(credential)));
  const row = credentialRow(credential);
  for (const [key, value] of Object.entries(row)) print(`${`${key}:`.padEnd(12)} ${Array.isArray(value) ? value.join(' ') || '(any)' : value}`);
}

/** The API's field names (SPEC §5), without the uri. */
function credentialRow(c: Credential) {
  return { id: c.id, account_id: c.accountId, owner_id: c.ownerId, description: c.description, metadata: c.metadata, acl: c.acl, created_at: c.createdAt };
}
