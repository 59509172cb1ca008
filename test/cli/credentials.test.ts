import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { withAdminServices } from '../../src/app/admin.js';
import { loadConfig } from '../../src/config.js';
import { cleanupProcesses, runCli, tempDatabaseUrl, type CliResult } from '../helpers/server-process.js';

/**
 * `burrow credentials` on a database with no server: whose credential it is (the account and the
 * owner it picks or asks for), and every page of a long list.
 */

after(cleanupProcesses);

let databaseUrl: string;
const burrow = (...args: string[]): Promise<CliResult> => runCli(args, { databaseUrl });

async function json(...args: string[]): Promise<Record<string, any>> {
  const result = await burrow(...args, '--json');
  assert.equal(result.code, 0, `burrow ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, any>;
}

let account: string;
let admin: string;

before(async () => {
  databaseUrl = tempDatabaseUrl();
  account = (await json('accounts', 'create', '--name', 'one')).id;
  admin = (await json('users', 'create', '--name', 'alice', '--admin')).id;
});

describe('burrow credentials: whose credential', () => {
  it("is owned by the account's only admin user, or by the --owner named", async () => {
    assert.equal((await json('credentials', 'create')).owner_id, admin);
    const bot = (await json('bots', 'create', '--name', 'ci')).id;
    assert.equal((await json('credentials', 'create', '--owner', bot)).owner_id, bot);
  });

  it('asks for --owner when the account has more than one admin user, and for --account when there are several', async () => {
    await json('users', 'create', '--name', 'bob', '--admin');
    const ambiguous = await burrow('credentials', 'create');
    assert.equal(ambiguous.code, 2);
    assert.match(ambiguous.stderr, /2 active admin users; say who owns the credential with --owner/);
    assert.equal((await json('credentials', 'create', '--owner', admin)).owner_id, admin);

    const other = (await json('accounts', 'create', '--name', 'two')).id;
    const which = await burrow('credentials', 'list');
    assert.equal(which.code, 1);
    assert.match(which.stderr, /There are 2 active accounts; say which one with --account/);
    const otherAdmin = (await json('users', 'create', '--name', 'carol', '--admin', '--account', other)).id;
    const theirs = await json('credentials', 'create', '--account', other);
    assert.equal(theirs.owner_id, otherAdmin);
    assert.equal(theirs.account_id, other);
    // one account's credential is not found through another
    const crossed = await burrow('credentials', 'get', theirs.id, '--account', account);
    assert.equal(crossed.code, 1);
    assert.match(crossed.stderr, /No credential/);
    const crossedOwner = await burrow('credentials', 'create', '--account', other, '--owner', admin);
    assert.equal(crossedOwner.code, 2);
    assert.match(crossedOwner.stderr, /ERR_NGROK_634/);
  });
});

describe('burrow credentials list', () => {
  it('prints every page, newest first', async () => {
    const config = loadConfig({ databaseUrl });
    await withAdminServices(config, async ({ accounts, credentials }) => {
      const owner = (await accounts.listPrincipals(account)).find((p) => p.id === admin)!;
      for (let i = 0; i < 230; i++) await credentials.create(owner, { description: `bulk ${i}` });
    });
    const result = await burrow('credentials', 'list', '--account', account, '--json');
    assert.equal(result.code, 0, result.stderr);
    const ids = result.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id: string }).id);
    assert.ok(ids.length >= 230, `${ids.length} listed`);
    assert.equal(new Set(ids).size, ids.length, 'no credential twice');
    assert.deepEqual([...ids].sort().reverse(), ids, 'newest (largest id) first');
    const table = (await burrow('credentials', 'list', '--account', account)).stdout.trim().split('\n');
    assert.equal(table.filter((line) => /^id +account_id/.test(line)).length, 1, 'one header for every page');
    assert.equal(table.filter((line) => line.startsWith('cr_')).length, ids.length);
  });
});
