// Runs every test file under test/ (or the paths given) with Node's built-in runner through tsx.
// Node 20's `--test` does not expand globs itself, so the file list is built here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createSlots, dropSlots } from './test-database-slots.mjs';

function collect(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path).sort().flatMap((entry) => collect(join(path, entry)));
}

const args = process.argv.slice(2);
const flags = args.filter((a) => a.startsWith('--'));
const roots = args.filter((a) => !a.startsWith('--'));
const flag = (name) => flags.find((f) => f.startsWith(`--${name}=`))?.slice(name.length + 3);
const unknown = flags.filter((f) => !/^--test-(concurrency|name-pattern)=/.test(f));
if (unknown.length) {
  process.stderr.write(`npm test: unknown flag ${unknown.join(' ')} (known: --test-concurrency=N, --test-name-pattern=RE)\n`);
  process.exit(2);
}
const postgres = process.env.TEST_DATABASE_URL;

// The slowest files start first, so the run does not end waiting on one long file started last:
// scripts/test-durations.json holds each file's seconds per pass: only their order matters (from
// one run of each pass at 85d3352, the SQLite one on an idle machine, the PostgreSQL one beside
// other work). BURROW_TEST_DURATIONS_OUT=<file> npm test writes a run's. A file it does not list
// counts as mid-list when it is an end-to-end one.
const measured = JSON.parse(readFileSync(new URL('./test-durations.json', import.meta.url), 'utf8'))[postgres ? 'postgres' : 'sqlite'];
const guess = (file) => measured[file] ?? (/^test\/(e2e|browser|cli)\//.test(file) ? 60 : 5);
// A file whose meaning does not depend on the store says which pass runs it, in its first line:
// `// @test-pass sqlite` (unit tests with no store, a browser, ACME) or `// @test-pass postgres`
// (suites that need TEST_DATABASE_URL, and the cluster suites, which bring their own PostgreSQL
// schema). The other pass leaves it out rather than start a process only to skip it, and says so.
const thisPass = postgres ? 'postgres' : 'sqlite';
const passOf = (file) => /^\/\/ @test-pass (sqlite|postgres)$/m.exec(readFileSync(file, 'utf8').slice(0, 2000))?.[1] ?? thisPass;
const collected = (roots.length ? roots : ['test']).flatMap(collect);
const elsewhere = collected.filter((file) => passOf(file) !== thisPass);
if (elsewhere.length) process.stdout.write(`# ${elsewhere.length} files run on the ${postgres ? 'SQLite' : 'PostgreSQL'} pass only (their "// @test-pass" line): ${elsewhere.join(' ')}\n`);
const files = collected
  .filter((file) => passOf(file) === thisPass)
  .map((file, index) => ({ file, index, seconds: guess(file) }))
  .sort((a, b) => b.seconds - a.seconds || a.index - b.index)
  .map(({ file }) => file);

// Most suites wait on child processes and sockets: three files at once keep 2 cores busy without
// starving the servers they start (the CI rehearsal that ran four at once was no faster). On
// PostgreSQL each running file has a database of its own (test-database-slots.mjs), so files
// never see each other's DDL; two at once there, where every file also drives the database.
const concurrency = Number(flag('test-concurrency') ?? (postgres ? 2 : 3));

// The suites that start `burrow serve` and the CLI run them from dist/ (half the start-up time of
// tsx, ~1.5 min per full run): build it first, so they never run a stale build.
const build = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
if (build.status !== 0) {
  process.stderr.write('npm test: the build (tsc -p tsconfig.json) failed\n');
  process.exit(build.status ?? 1);
}
const env = { ...process.env, BURROW_TEST_DIST: '1' };
const preload = [];
if (postgres) {
  Object.assign(env, await createSlots(postgres, concurrency));
  preload.push('--import', new URL('./test-database-slot.mjs', import.meta.url).href);
}
let status;
try {
  const runner = [...preload, '--import', 'tsx', 'scripts/run-files.mjs', String(concurrency), flag('test-name-pattern') ?? '', ...files];
  status = spawnSync(process.execPath, runner, { stdio: 'inherit', env }).status ?? 1;
} finally {
  if (postgres) await dropSlots(postgres, concurrency);
}
process.exit(status);
