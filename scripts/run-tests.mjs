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
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', ...flags, ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
