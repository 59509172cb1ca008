import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  api,
  cleanupProcesses,
  generateApiKey,
  runCli,
  startServer,
  tempDatabaseUrl,
  type CliResult,
  type ServerProcess,
} from '../helpers/server-process.js';

/**
 * The `burrow` CLI run as a process against the same SQLite file as a running `burrow serve`
 * (SPEC §4: the CLI manages accounts, users, bots, the admin flag and API keys).
 */

after(cleanupProcesses);

const KEY_SHAPE = /[0-9A-Za-z]{27}_[0-9A-Za-z]{21}/g;
/** SPEC §4: a revoked key stops working within one second; allow for a loaded machine. */
const REVOCATION_BOUND_MS = 1500;

interface PrincipalJson {
  id: string;
  account_id: string;
  kind: 'user' | 'bot';
  name: string;
  admin: boolean;
  created_at: string;
  revoked_at: string | null;
}

interface ApiKeyJson {
  id: string;
  account_id: string;
  owner_id: string;
  description: string;
  prefix: string;
  key: string;
}

/** Asserts the run succeeded and returns it. */
function ok(result: CliResult, what: string): CliResult {
  assert.equal(result.code, 0, `${what} failed (code ${result.code}):\n${result.stderr}${result.stdout}`);
  return result;
}

/** Asserts the run failed with a message on stderr and nothing on stdout. */
function failed(result: CliResult, what: string, message: RegExp): void {
  assert.notEqual(result.code, 0, `${what} should fail:\n${result.stdout}`);
  assert.match(result.stderr, message, `${what}: stderr was ${JSON.stringify(result.stderr)}`);
  assert.equal(result.stdout, '', `${what} printed to stdout`);
}

/** The JSON lines of a `--json` listing. */
function jsonLines<T>(result: CliResult): T[] {
  return result.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

/**
 * Uses `key` continuously while `revoking` (a CLI run) is under way, so the server keeps it in
 * whatever cache it has, until the server answers 401 ERR_NGROK_203. Returns the revoking run
 * and how long after that process exited the key was last accepted (0 if never).
 */
async function revocationDelay(server: ServerProcess, key: string, revoking: Promise<CliResult>): Promise<{ run: CliResult; ms: number }> {
  let run: CliResult | undefined;
  const finished = revoking.then((result) => (run = result));
  finished.catch(() => {});
  let polls = 0;
  for (;; polls++) {
    const response = await api(server, 'GET', '/credentials?limit=1', { key });
    if (response.status === 401) {
      assert.ok(polls > 0, 'the key did not work before it was revoked');
      assert.equal(response.body.error_code, 'ERR_NGROK_203', response.text);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer');
      const rejectedAt = Date.now();
      const done = await finished;
      return { run: done, ms: Math.max(0, rejectedAt - done.endedAt) };
    }
    assert.equal(response.status, 200, response.text);
    if (run) {
      assert.equal(run.code, 0, `the revoking run failed:\n${run.stderr}`);
      assert.ok(Date.now() - run.endedAt < 5000, 'the key still works 5 s after its revocation');
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Polls until `check` passes (for effects the server may cache for up to a second). */
async function eventually(check: () => Promise<void>, boundMs = REVOCATION_BOUND_MS): Promise<void> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

describe('burrow CLI', { concurrency: true }, () => {
  // The steps below build on each other: one at a time. Each CLI run is a whole Node process
  // (about a second of CPU through tsx), so runs are few and independent ones go in parallel.
  describe('against a running server on the same database', { concurrency: 1 }, () => {
    const databaseUrl = tempDatabaseUrl();
    const cli = (...args: string[]) => runCli(args, { databaseUrl });
    let server: ServerProcess;
    let adminUserId: string;
    let accountId: string;
    let bot: PrincipalJson;
    let botKeyA: ApiKeyJson;
    let botKeyB: string;
    let botKeyBId: string;
    let alice: PrincipalJson;
    let aliceKey: string;
    let botsRevokeOfAUser: Promise<CliResult> | undefined;
    /** Every secret this suite has seen: no listing may print one. */
    const secrets: string[] = [];
    /** Every CLI output except the `api-keys create` runs that are meant to show a key. */
    const outputs: CliResult[] = [];
    const track = (result: CliResult) => (outputs.push(result), result);

    before(async () => {
      const migrated = track(ok(await cli('migrate'), 'migrate'));
      assert.match(migrated.stdout, /^Applied: 001_initial\b/m);
      // The second run, while the server starts on the migrated file.
      // An operator's key of SPEC §2's shape whose first half is no KSUID (above the largest): any
      // well-formed key is taken (SPEC §4), and its id `ak_aaa…` is listed and served like any.
      const operatorKey = `${'a'.repeat(27)}${generateApiKey().slice(27)}`;
      const [again, started] = await Promise.all([cli('migrate'), startServer({ databaseUrl, bootstrapApiKey: operatorKey })]);
      server = started;
      assert.equal(track(ok(again, 'migrate (again)')).stdout.trim(), 'The database is up to date.');
      secrets.push(server.apiKey);
      adminUserId = server.bootstrap!.userId;
      accountId = server.bootstrap!.accountId;
    });

    it('migrate applies once, then says the database is up to date', () => {
      assert.ok(!server.logs().some((entry) => entry.msg === 'database migrated'), 'serve found pending migrations');
      assert.ok(server.bootstrap, 'serve bootstrapped the migrated, empty database');
    });

    it('creates a non-admin bot, an admin user, and API keys that act as them', async () => {
      const [botRun, aliceRun] = await Promise.all([
        cli('bots', 'create', '--name', 'ci-runner', '--json'),
        cli('users', 'create', '--name', 'alice', '--admin', '--json'),
      ]);
      bot = JSON.parse(ok(botRun, 'bots create').stdout) as PrincipalJson;
      assert.match(bot.id, /^bot_[0-9A-Za-z]{27}$/);
      assert.equal(bot.kind, 'bot');
      assert.equal(bot.admin, false);
      assert.equal(bot.account_id, accountId, 'the only account is the default');
      alice = JSON.parse(ok(aliceRun, 'users create --admin').stdout) as PrincipalJson;
      assert.match(alice.id, /^usr_[0-9A-Za-z]{27}$/);
      assert.equal(alice.kind, 'user');
      assert.equal(alice.admin, true);

      // Two keys for the bot, --json and plain (printed once on stdout, the notice on stderr).
      const [jsonRun, plainRun, aliceKeyRun] = await Promise.all([
        cli('api-keys', 'create', '--owner', bot.id, '--description', 'deploys', '--json'),
        cli('api-keys', 'create', '--owner', bot.id),
        cli('api-keys', 'create', '--owner', alice.id, '--json'),
      ]);
      botKeyA = JSON.parse(ok(jsonRun, 'api-keys create --json').stdout) as ApiKeyJson;
      assert.match(botKeyA.key, /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/);
      assert.equal(botKeyA.id, `ak_${botKeyA.key.slice(0, 27)}`);
      assert.equal(botKeyA.owner_id, bot.id);
      assert.equal(botKeyA.description, 'deploys');
      ok(plainRun, 'api-keys create');
      botKeyB = plainRun.stdout.trim();
      assert.match(botKeyB, /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/);
      botKeyBId = `ak_${botKeyB.slice(0, 27)}`;
      assert.match(plainRun.stderr, /will not be shown again/);
      assert.ok(plainRun.stderr.includes(botKeyBId));
      assert.ok(!plainRun.stderr.includes(botKeyB), 'the key goes to stdout only');
      aliceKey = (JSON.parse(ok(aliceKeyRun, 'api-keys create').stdout) as ApiKeyJson).key;
      secrets.push(botKeyA.key, botKeyB, aliceKey);

      const created = await api(server, 'POST', '/credentials', { key: botKeyA.key, body: { description: 'made by the bot' } });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.owner_id, bot.id);
      secrets.push(created.body.token as string);

      const ownSelf = await api(server, 'POST', '/credentials', { key: botKeyB, body: { owner_id: bot.id } });
      assert.equal(ownSelf.status, 201, ownSelf.text);
      assert.equal(ownSelf.body.owner_id, bot.id);

      const forOther = await api(server, 'POST', '/credentials', { key: botKeyA.key, body: { owner_id: adminUserId } });
      assert.equal(forOther.status, 403, forOther.text);
      assert.equal(forOther.body.error_code, 'ERR_NGROK_630');
      assert.equal(forOther.body.status_code, 403);

      // alice is an admin: she may name the bot as the owner.
      const byAlice = await api(server, 'POST', '/credentials', { key: aliceKey, body: { owner_id: bot.id } });
      assert.equal(byAlice.status, 201, byAlice.text);
      assert.equal(byAlice.body.owner_id, bot.id);
    });

    it('lists users, bots and API keys, and revokes an API key: the server refuses it within the bound', async () => {
      const [usersRun, botsRun, keysRun, revocation] = await Promise.all([
        cli('users', 'list'),
        cli('bots', 'list'),
        cli('api-keys', 'list'),
        revocationDelay(server, botKeyA.key, cli('api-keys', 'revoke', botKeyA.id)),
      ]);
      const revoked = track(ok(revocation.run, 'api-keys revoke'));
      assert.ok(revoked.stdout.includes(botKeyA.id));
      assert.ok(revocation.ms <= REVOCATION_BOUND_MS, `the revoked key still worked ${revocation.ms} ms later`);
      assert.equal((await api(server, 'GET', '/credentials', { key: botKeyB })).status, 200, 'the bot’s other key still works');

      const users = table(track(ok(usersRun, 'users list')));
      assert.deepEqual(users.map((u) => u.id).sort(), [adminUserId, alice.id].sort());
      assert.equal(users.find((u) => u.id === alice.id)?.admin, 'true');
      assert.equal(users.find((u) => u.id === alice.id)?.name, 'alice');
      const bots = table(track(ok(botsRun, 'bots list')));
      assert.deepEqual(bots.map((b) => b.id), [bot.id]);
      assert.equal(bots[0]?.admin, 'false');
      const keysText = track(ok(keysRun, 'api-keys list')).stdout;
      for (const id of [`ak_${server.apiKey.slice(0, 27)}`, botKeyA.id, botKeyBId]) {
        assert.ok(keysText.includes(id), `api-keys list lacks ${id}`);
      }
      assert.ok(keysText.includes('deploys'), 'api-keys list shows descriptions');
    });

    it('revokes a bot (its other keys stop working) and withdraws an admin flag', async () => {
      const [revocation, withdraw] = await Promise.all([
        revocationDelay(server, botKeyB, cli('bots', 'revoke', bot.id)),
        cli('users', 'set-admin', alice.id, '--no-admin'),
      ]);
      const botRevoke = track(ok(revocation.run, 'bots revoke'));
      assert.ok(botRevoke.stdout.includes(bot.id));
      assert.ok(revocation.ms <= REVOCATION_BOUND_MS, `the revoked bot's key still worked ${revocation.ms} ms later`);

      track(ok(withdraw, 'users set-admin --no-admin'));
      assert.ok(withdraw.stdout.includes(alice.id));
      // alice's key still works, but she may no longer name someone else as the owner.
      await eventually(async () => {
        const response = await api(server, 'POST', '/credentials', { key: aliceKey, body: { owner_id: adminUserId } });
        assert.equal(response.status, 403, response.text);
        assert.equal(response.body.error_code, 'ERR_NGROK_630');
      });
      const own = await api(server, 'POST', '/credentials', { key: aliceKey, body: { description: 'her own' } });
      assert.equal(own.status, 201, own.text);
      assert.equal(own.body.owner_id, alice.id);
    });

    it('creates, lists and revokes accounts; bad input fails with a message on stderr', async () => {
      const unknownBot = 'bot_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
      const unknownKey = 'ak_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
      const [created, noOwner, noKey] = await Promise.all([
        cli('accounts', 'create', '--name', 'tenant-b', '--json'),
        cli('api-keys', 'create', '--owner', unknownBot),
        cli('api-keys', 'revoke', unknownKey),
      ]);
      failed(noOwner, 'api-keys create for an unknown owner', new RegExp(unknownBot));
      failed(noKey, 'api-keys revoke of an unknown key', new RegExp(unknownKey));
      const other = JSON.parse(ok(created, 'accounts create').stdout) as { id: string; name: string };
      assert.match(other.id, /^acct_[0-9A-Za-z]{27}$/);
      assert.equal(other.name, 'tenant-b');

      const bob = JSON.parse(ok(await cli('users', 'create', '--name', 'bob', '--account', other.id, '--json'), 'users create').stdout) as PrincipalJson;
      assert.equal(bob.account_id, other.id);
      const bobKey = (JSON.parse(ok(await cli('api-keys', 'create', '--owner', bob.id, '--json'), 'api-keys create').stdout) as ApiKeyJson).key;
      secrets.push(bobKey);

      const bobsList = await api(server, 'GET', '/credentials', { key: bobKey });
      assert.equal(bobsList.status, 200, bobsList.text);
      assert.deepEqual(bobsList.body.credentials, [], 'a new account sees none of the first account’s credentials');
      const mine = await api(server, 'POST', '/credentials', { key: bobKey, body: { description: 'tenant b' } });
      assert.equal(mine.status, 201, mine.text);
      const crossed = await api(server, 'GET', `/credentials/${String(mine.body.id)}`);
      assert.equal(crossed.status, 404, 'another account’s credential is not found');
      // Even an admin cannot name a principal of another account as the owner.
      const foreignOwner = await api(server, 'POST', '/credentials', { body: { owner_id: bob.id } });
      assert.equal(foreignOwner.status, 400, foreignOwner.text);
      assert.equal(foreignOwner.body.error_code, 'ERR_NGROK_634');

      const revocation = await revocationDelay(server, bobKey, cli('accounts', 'revoke', other.id));
      const revoked = track(ok(revocation.run, 'accounts revoke'));
      assert.ok(revoked.stdout.includes(other.id));
      assert.ok(revocation.ms <= REVOCATION_BOUND_MS, `a key of the revoked account still worked ${revocation.ms} ms later`);
      assert.equal((await api(server, 'GET', '/credentials')).status, 200, 'the first account is unaffected');

      // The global --database-url wins over DATABASE_URL (which points at another, empty file).
      // The todo test below checks the first run of this batch.
      botsRevokeOfAUser = cli('bots', 'revoke', alice.id);
      botsRevokeOfAUser.catch(() => {}); // awaited by that test
      const [accountsRun, keysRun] = await Promise.all([
        runCli(['--database-url', databaseUrl, 'accounts', 'list'], { databaseUrl: tempDatabaseUrl() }),
        cli('api-keys', 'list', '--json'),
      ]);
      const keys = jsonLines<Record<string, unknown>>(track(ok(keysRun, 'api-keys list --json')));
      assert.match(String(keys.find((k) => k.id === botKeyA.id)?.revoked_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(keys.find((k) => k.id === botKeyA.id)?.owner_id, bot.id);
      assert.equal(keys.find((k) => k.id === botKeyA.id)?.description, 'deploys');
      assert.equal(keys.find((k) => k.id === botKeyBId)?.revoked_at, null, 'revoking a bot does not rewrite its keys');
      assert.equal(keys.length, 5, 'the bootstrap key, two of the bot, one of alice and one of bob');
      const accounts = table(track(ok(accountsRun, 'accounts list')));
      assert.deepEqual(accounts.map((a) => a.id).sort(), [accountId, other.id].sort());
      assert.equal(accounts.find((a) => a.id === other.id)?.name, 'tenant-b');
      assert.match(accounts.find((a) => a.id === other.id)!.revoked_at!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(accounts.find((a) => a.id === accountId)?.revoked_at, '-');
    });

    it('bots revoke refuses the id of a user', async () => {
      assert.ok(botsRevokeOfAUser, 'the previous test did not get that far');
      const result = await botsRevokeOfAUser;
      assert.notEqual(result.code, 0, `\`bots revoke ${alice.id}\` (a user) succeeded: ${result.stdout}`);
      assert.match(result.stderr, new RegExp(alice.id));
    });

    it('never prints a secret in a listing, revocation or admin command', () => {
      assert.ok(secrets.length >= 5 && outputs.length >= 8);
      for (const result of outputs) {
        for (const secret of secrets) {
          const randomHalf = secret.slice(28);
          assert.ok(!result.stdout.includes(randomHalf) && !result.stderr.includes(randomHalf), `a CLI run printed a secret:\n${result.stdout}`);
        }
        assert.equal((result.stdout.match(KEY_SHAPE) ?? []).length, 0, `something key-shaped was printed:\n${result.stdout}`);
      }
    });

    it('never prints the BOOTSTRAP_API_KEY or any other secret in the server output', () => {
      const output = [...server.stdout, ...server.stderr].join('\n');
      for (const secret of secrets) assert.ok(!output.includes(secret.slice(28)), 'a secret reached the server output');
      assert.equal((output.match(KEY_SHAPE) ?? []).length, 0);
      assert.doesNotMatch(server.stderr.join('\n'), /will not be shown again/, 'an operator-supplied key is not announced');
    });
  });

  describe('bootstrap without BOOTSTRAP_API_KEY', { concurrency: 1 }, () => {
    it('prints a usable key once, with a warning, and never again', async (t) => {
      const databaseUrl = tempDatabaseUrl();
      const first = await startServer({ databaseUrl, bootstrapApiKey: null, context: t });
      const stderr = first.stderr.join('\n');
      const printed = stderr.match(KEY_SHAPE) ?? [];
      assert.equal(printed.length, 1, `expected one key on stderr:\n${stderr}`);
      const key = printed[0]!;
      assert.match(stderr, /will not be shown again/);
      assert.ok(!first.stdout.join('\n').includes(key.slice(28)), 'the key reached the log');
      assert.equal(`ak_${key.slice(0, 27)}`, first.bootstrap?.apiKeyId);
      const listed = await api(first, 'GET', '/credentials', { key });
      assert.equal(listed.status, 200, listed.text);
      const exit = await first.stop('SIGTERM');
      assert.equal(exit.code, 0);

      const second = await startServer({ databaseUrl, bootstrapApiKey: null, context: t });
      assert.equal(second.bootstrap, undefined);
      assert.equal((second.stderr.join('\n').match(KEY_SHAPE) ?? []).length, 0, 'a second start printed a key');
      assert.doesNotMatch(second.stderr.join('\n'), /will not be shown again/);
      const again = await api(second, 'GET', '/credentials', { key });
      assert.equal(again.status, 200, 'the printed key survives a restart');
      await second.kill();
    });
  });

  describe('configuration errors', { concurrency: 1 }, () => {
    it('serve exits non-zero naming the bad variable', async () => {
      const databaseUrl = tempDatabaseUrl();
      const badKey = `${generateApiKey().slice(0, 27)}_tooShort`;
      const [port, bootstrapKey] = await Promise.all([
        runCli(['serve'], { databaseUrl, env: { PORT: 'abc' } }),
        runCli(['serve'], { databaseUrl, env: { PORT: '0', BOOTSTRAP_API_KEY: badKey } }),
      ]);
      failed(port, 'PORT=abc', /PORT/);
      assert.match(port.stderr, /abc/);
      failed(bootstrapKey, 'a malformed BOOTSTRAP_API_KEY', /BOOTSTRAP_API_KEY/);
      assert.ok(!bootstrapKey.stderr.includes(badKey), 'the rejected key value was echoed');
    });
  });
});

/** Rows of an aligned-column listing (the CLI's default output); cells must hold no spaces. */
function table(result: CliResult): Record<string, string>[] {
  const lines = result.stdout.split('\n').filter((line) => line.trim() !== '');
  if (lines[0] === '(none)') return [];
  const header = lines[0]!.split(/\s+/);
  return lines.slice(1).map((line) => {
    const cells = line.trim().split(/\s+/);
    assert.equal(cells.length, header.length, `unexpected listing line: ${line}`);
    return Object.fromEntries(header.map((name, i) => [name, cells[i]!]));
  });
}
