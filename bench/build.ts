import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { burrowCommand, PROJECT_ROOT, runToEnd, type BurrowCommand } from './processes.js';

/** Newest modification time (ms) of the files under `dir` whose names end in `suffix`; 0 when none. */
function newest(dir: string, suffix: string): number {
  let latest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path, suffix));
    else if (entry.name.endsWith(suffix)) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * The command that runs burrow: compiled dist/ when it is at least as new as src/ (building it
 * with `npm run build` when not), else — with --source, or when the build fails — src/ via tsx.
 */
export async function prepareBurrow(fromSource: boolean, log: (line: string) => void): Promise<BurrowCommand> {
  if (fromSource) return burrowCommand(true);
  const srcTime = newest(join(PROJECT_ROOT, 'src'), '.ts');
  const distTime = newest(join(PROJECT_ROOT, 'dist'), '.js');
  if (distTime >= srcTime) return burrowCommand(false);
  log('dist/ is older than src/: running npm run build …');
  const code = await runToEnd('npm', ['run', '--silent', 'build']);
  if (code === 0) return burrowCommand(false);
  log(`npm run build failed (exit ${code}): running the server from src/ through tsx instead`);
  return burrowCommand(true);
}
