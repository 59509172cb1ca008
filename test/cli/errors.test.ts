// The CLI as an operator meets it when something is off: a reader that closes the pipe early,
// start-up errors that name their variable and end within seconds, one-line errors with the
// documented exit codes (README "CLI"), read-only commands that never create a database, and
// `--account` required as soon as there are several accounts.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { AccountService } from '../../src/domain/accounts/service.js';
import { newId } from '../../src/domain/ids.js';
import { openStore } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { SqlAccountRepository } from '../../src/storage/repositories/accounts.js';
import { onSqlitePassOnly } from '../helpers/stores.js';
import { cleanupProcesses, runCli, spawnCli, startServer, tempDatabaseUrl, type CliResult } from '../helpers/server-process.js';
import { freePort } from '../helpers/traffic.js';

after(cleanupProcesses);

/** One line on stderr, no stack, nothing on stdout, and the exit code. */
function oneLineError(result: CliResult, code: number, message: RegExp): void {
  assert.equal(result.code, code, `exit code; stderr: ${result.stderr}`);
  const lines = result.stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
  assert.match(lines[0]!, /^burrow: /);
  assert.match(lines[0]!, message);
  assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
  assert.equal(result.stdout, '');
}

describe('burrow CLI errors and exit codes', () => {
  let databaseUrl: string;
  let accountIds: string[];
  before(async () => {
    // Enough accounts that `accounts list --json` overflows a pipe buffer many times over.
    databaseUrl = tempDatabaseUrl();
    const store = openStore(databaseUrl);
    await migrateToLatest(store);
    const accounts = new AccountService(new SqlAccountRepository(store));
    await accounts.bootstrap();
    // one multi-row insert per 500 (one by one, 1,500 commits took ~20 s on PostgreSQL)
    const rows = Array.from({ length: 1500 }, (_, i) => {
      const { id, createdAt } = newId('acct');
      return { id, name: `tenant-${i}-${'x'.repeat(100)}`, created_at: createdAt, revoked_at: null };
    });
    for (let i = 0; i < rows.length; i += 500) await store.db.insertInto('accounts').values(rows.slice(i, i + 500)).execute();
    accountIds = rows.map((row) => row.id);
    await store.close();
  });

  it('exits 0 quietly when its reader closes the pipe (`accounts list --json | head -n 1`)', async () => {
    const child = spawnCli(['accounts', 'list', '--json'], { databaseUrl });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let first = '';
    child.stdout!.once('data', (chunk: Buffer) => {
      first = chunk.toString();
      child.stdout!.destroy(); // what head does after its line
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', (exit) => resolve(exit)));
    assert.match(first, /^\{"id":"acct_/);
    assert.equal(stderr, '', 'nothing on stderr');
    assert.equal(code, 0);
  });

  it('requires --account for users list and bots list once there are several accounts', async () => {
    // read-only commands, independent of each other: run at once
    const cases: [string[], number, RegExp][] = [
      [['users', 'list'], 1, /active accounts; say which one with --account/],
      [['bots', 'list'], 1, /--account/],
      [['users', 'list', '--account', 'acct_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ'], 1, /^burrow: No active account acct_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ\.$/],
      [['bots', 'list', '--account', 'nonsense'], 1, /No active account nonsense/],
      [['api-keys', 'list', '--account', 'acct_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ'], 1, /^burrow: No account acct_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ\.$/],
      [['users', 'set-admin', 'usr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ'], 2, /^burrow: say --admin or --no-admin \(see burrow users set-admin --help\)$/],
    ];
    const [keys, one, ...errors] = await Promise.all([
      runCli(['api-keys', 'list', '--json', '--account', accountIds[0]!], { databaseUrl }),
      runCli(['users', 'list', '--json', '--account', accountIds[0]!], { databaseUrl }),
      ...cases.map(([args]) => runCli(args, { databaseUrl })),
    ]);
    cases.forEach(([, code, message], i) => oneLineError(errors[i]!, code, message));
    assert.equal(keys!.code, 0, keys!.stderr);
    assert.equal(one!.code, 0, one!.stderr);
    assert.equal(one!.stdout, '', 'the new account has no users');
  });

  // a SQLite file whatever the pass
  it('never creates a database for a read-only command', { skip: onSqlitePassOnly }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burrow-cli-'));
    const file = join(dir, 'missing', 'burrow.db');
    const commands = [['users', 'list'], ['bots', 'list'], ['accounts', 'list'], ['api-keys', 'list']];
    for (const result of await Promise.all(commands.map((args) => runCli(args, { databaseUrl: `sqlite:${file}` })))) {
      oneLineError(result, 1, /^burrow: DATABASE_URL: there is no database at /);
    }
    assert.ok(!existsSync(join(dir, 'missing')), 'no directory or file was created');
  });

  it('writes no table into an empty database for a read-only command, and says to migrate', async () => {
    const url = tempDatabaseUrl();
    const file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : undefined;
    if (file) writeFileSync(file, ''); // an empty file: SQLite takes it for an empty database
    const commands = [['users', 'list'], ['accounts', 'list'], ['api-keys', 'list']];
    for (const result of await Promise.all(commands.map((args) => runCli(args, { databaseUrl: url })))) {
      oneLineError(result, 1, /^burrow: DATABASE_URL: the database has no burrow tables yet: run `burrow migrate`/);
    }
    if (file) {
      // (opening it writes SQLite's header and WAL mode: no schema)
      const db = new Database(file, { readonly: true });
      assert.deepEqual(db.prepare('select name from sqlite_master').all(), [], 'no table was created');
      db.close();
    }
    else {
      // on PostgreSQL the URL names a schema that does not exist: it is not created
      const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await client.connect();
      try {
        const schema = new URL(url).searchParams.get('schema');
        const found = await client.query('select 1 from information_schema.schemata where schema_name = $1', [schema]);
        assert.equal(found.rowCount, 0, `schema ${schema} was not created`);
      } finally {
        await client.end();
      }
    }
    // once migrated, the same commands work
    assert.equal((await runCli(['migrate'], { databaseUrl: url })).code, 0);
    const listed = await runCli(['accounts', 'list'], { databaseUrl: url });
    assert.equal(listed.code, 0, listed.stderr);
  });

  it('serve bootstraps nothing on a database whose accounts the CLI made before its first start, and says so', async () => {
    const url = tempDatabaseUrl();
    const made = await runCli(['accounts', 'create', '--name', 'first'], { databaseUrl: url });
    assert.equal(made.code, 0, made.stderr);
    const server = await startServer({ databaseUrl: url, bootstrapApiKey: null });
    try {
      assert.equal(server.bootstrap, undefined, 'no bootstrap account, user or key');
      assert.ok(!server.stderr.join('\n').includes('will not be shown again'), 'no key printed');
      assert.ok(server.logs().some((line) => String(line.msg).startsWith('the database already had accounts')), 'the start says why');
    } finally {
      await server.stop();
    }
    const listed = await runCli(['accounts', 'list', '--json'], { databaseUrl: url });
    assert.deepEqual(listed.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { name: string }).name), ['first']);
  });

  // refused before the store is opened: the same on either
  it('answers a usage error with one line and exit 2', { skip: onSqlitePassOnly }, async () => {
    const cases: [string[], RegExp][] = [
      [['users', 'list', '--bogus'], /unknown option '--bogus'.*users list --help/],
      [['users', 'lisst'], /unknown command 'lisst'/],
      [['users', 'create'], /required option '--name <name>'/],
      ...['', '   ', 'two\nlines', 'x'.repeat(256)].map((name): [string[], RegExp] => [['accounts', 'create', '--name', name], /^burrow: --name must be 1 to 255 characters of one line/]),
    ];
    const [version, mysql, ...results] = await Promise.all([
      runCli(['--version'], { databaseUrl }),
      runCli(['users', 'list'], { env: { DATABASE_URL: 'mysql://x' } }),
      ...cases.map(([args]) => runCli(args, { databaseUrl })),
    ]);
    cases.forEach(([, message], i) => oneLineError(results[i]!, 2, message));
    assert.equal(version!.code, 0);
    assert.match(version!.stdout, /^\d+\.\d+\.\d+\n$/);
    oneLineError(mysql!, 2, /DATABASE_URL/);
  });

  // each case names its own DATABASE_URL, or fails before opening one
  it('names the variable of every start-up error and exits within seconds', { skip: onSqlitePassOnly }, async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    after(() => busy.close());
    const busyPort = (busy.address() as net.AddressInfo).port;
    const dataPlaneOn = async (tlsDir = mkdtempSync(join(tmpdir(), 'burrow-tls-'))) => ({
      AGENT_PORT: String(await freePort()),
      TLS_DIR: tlsDir,
      EDGE_HTTP_PORT: '0',
      EDGE_TLS_PORT: '0',
      EDGE_TCP_PORTS: '',
    });
    const cases: [Record<string, string>, number, RegExp][] = [
      // Node's recursive mkdir never returned on this path: burrow serve hung.
      [{ DATABASE_URL: 'sqlite:/proc/nope/burrow.db' }, 1, /^burrow: DATABASE_URL: cannot open the database: cannot create the directory \/proc\/nope/],
      // pg said only "Invalid URL"; the password must not be echoed.
      [{ DATABASE_URL: 'postgres://user:secret@db.example:54x32/burrow' }, 2, /^burrow: Invalid configuration: DATABASE_URL is not a valid postgres:\/\/ URL/],
      [{ DATABASE_URL: 'postgres://user:secret@unresolvable.invalid/burrow' }, 1, /^burrow: DATABASE_URL: cannot prepare the database: .*ENOTFOUND/],
      // Only "getaddrinfo ENOTFOUND" before.
      [{ DATABASE_URL: 'sqlite::memory:', HOST: 'unresolvable.invalid', BOOTSTRAP_API_KEY: '' }, 1, /^burrow: HOST: cannot listen on unresolvable\.invalid:0: .*ENOTFOUND/],
      [{ PORT: '70000' }, 2, /PORT must be a whole number from 0 to 65535/],
      [{ TRUST_PROXY: '10.0.0.0/33' }, 2, /^burrow: Invalid configuration: TRUST_PROXY .*"10\.0\.0\.0\/33" is neither/],
      // The same endless recursive mkdir, for the CA's directory.
      [{ DATABASE_URL: 'sqlite::memory:', ...(await dataPlaneOn('/proc/nope/tls')) }, 1, /^burrow: TLS_DIR: cannot create TLS_DIR \/proc\/nope\/tls: ENOENT/],
      // Only "the edge-http listener" before.
      [{ DATABASE_URL: 'sqlite::memory:', ...(await dataPlaneOn()), EDGE_HTTP_PORT: String(busyPort) }, 1, new RegExp(`^burrow: EDGE_HTTP_PORT: cannot listen on 127\\.0\\.0\\.1:${busyPort}: .*EADDRINUSE`)],
    ];
    const run = async ([env, code, message]: (typeof cases)[number]) => {
      const started = Date.now();
      // Before, the /proc case never ended; ~3 s alone, the bound allows for a loaded test run.
      // AGENT_PORT=0: the data plane would make its CA in ./data/tls of the repository
      const result = await runCli(['serve'], { env: { PORT: '0', AGENT_PORT: '0', LOG_LEVEL: 'silent', ...env }, timeoutMs: 20_000 });
      return { env, code, message, result, elapsed: Date.now() - started };
    };
    // Four at a time: each case is a process of its own that mostly waits on its own failure.
    const runs = [];
    for (let i = 0; i < cases.length; i += 4) runs.push(...(await Promise.all(cases.slice(i, i + 4).map(run))));
    for (const { env, code, message, result, elapsed } of runs) {
      // serve prints the bootstrap notice on an empty database before it listens: drop it.
      const lines = result.stderr.split('\n').filter((line) => line.startsWith('burrow: ') && !line.includes('created the first admin'));
      assert.equal(result.code, code, `${JSON.stringify(env)}: exit code; stderr: ${result.stderr}`);
      assert.equal(lines.length, 1, `${JSON.stringify(env)}: one error line, got:\n${result.stderr}`);
      assert.match(lines[0]!, message, JSON.stringify(env));
      assert.doesNotMatch(result.stderr, /^\s+at |secret/m, `${JSON.stringify(env)}: no stack, no password`);
      assert.ok(elapsed < 15_000, `${JSON.stringify(env)}: took ${elapsed} ms`);
    }
  });
});
