// Runs every test file under test/ (or the paths given) with Node's built-in runner through tsx.
// Node 20's `--test` does not expand globs itself, so the file list is built here.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function collect(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path).sort().flatMap((entry) => collect(join(path, entry)));
}

const args = process.argv.slice(2);
const flags = args.filter((a) => a.startsWith('--'));
const roots = args.filter((a) => !a.startsWith('--'));
const files = (roots.length ? roots : ['test']).flatMap(collect);
// Node 20 runs one file at a time on a 2-core machine; most suites wait on child processes and
// sockets, so three at once roughly halves the wall time on SQLite. On PostgreSQL files stay one
// at a time: each file drops its schemas at its end, and DDL racing another file's migration can
// fail it (Kysely's table check lists every schema's tables: 3F000 for a schema being dropped,
// now retried in storage/migrate.ts; PostgreSQL itself rarely gave a 42703 under such a race in a
// stress run). `--test-concurrency=N` overrides either.
const concurrency = process.env.TEST_DATABASE_URL ? 1 : 3;
if (!flags.some((flag) => flag.startsWith('--test-concurrency'))) flags.push(`--test-concurrency=${concurrency}`);
// The suites that start `burrow serve` and the CLI run them from dist/ (half the start-up time of
// tsx, ~1.5 min per full run): build it first, so they never run a stale build.
const build = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
if (build.status !== 0) {
  process.stderr.write('npm test: the build (tsc -p tsconfig.json) failed\n');
  process.exit(build.status ?? 1);
}
const env = { ...process.env, BURROW_TEST_DIST: '1' };
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', ...flags, ...files], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
