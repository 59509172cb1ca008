import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { parseOptions, UsageError } from './args.js';
import { prepareBurrow } from './build.js';
import { runCompare } from './compare.js';
import type { ModeResult, RunContext } from './context.js';
import { cpus } from 'node:os';
import { keepTemporaryFiles, makeTempDir, pinCpus, PROJECT_ROOT } from './processes.js';
import { runProfile } from './profile.js';
import { describeMachine, machineInfo, revision, writeJson } from './report.js';
import { runScale } from './scale.js';
import { runTunnels } from './tunnels/run.js';

/**
 * `npm run bench -- [flags]` (see bench/args.ts or --help). Starts every server and the load
 * generator as child processes, prints the figures, and exits 1 when any answer was not 2xx.
 */
async function main(): Promise<number> {
  let options;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${(error as Error).message}\n\n${new UsageError('').usage}`);
      return 2;
    }
    throw error;
  }
  if (process.platform !== 'linux') process.stderr.write('bench: RSS sampling and port discovery read /proc; Linux only.\n');

  const machine = machineInfo();
  const log = (line: string) => process.stderr.write(`· ${line}\n`);
  const out = (text: string) => process.stdout.write(`${text}\n`);
  const dir = makeTempDir();
  if (options.keep) {
    keepTemporaryFiles();
    log(`keeping ${dir}`);
  }
  log(`machine: ${describeMachine(machine)}`);
  const count = cpus().length;
  if (options.pin && count >= 2 && spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0) {
    const rest = count === 2 ? '1' : `1-${count - 1}`;
    pinCpus('0', rest);
    log(`pinning (taskset): servers on CPU 0, load generator on CPU ${rest} (--no-pin to let the scheduler decide)`);
  } else {
    options.pin = false;
    log('not pinning: servers and load generator share every CPU');
  }
  const started = performance.now();
  const command = await prepareBurrow(options.source, log);
  // After the build: the revision the server was built from.
  const rev = revision(PROJECT_ROOT);
  out(`burrow ${rev.commit}${rev.uncommittedSrc.length > 0 ? ` + uncommitted changes in ${rev.uncommittedSrc.join(', ')}` : ''}`);
  const ctx: RunContext = { options, command, dir, machine, log, out };

  const run = { compare: runCompare, scale: runScale, profile: runProfile, tunnels: runTunnels }[options.mode];
  const result: ModeResult = await run(ctx);
  const seconds = (performance.now() - started) / 1000;
  out(`\n(${options.mode} run took ${seconds.toFixed(0)} s)`);

  if (options.jsonFile) {
    const file = resolve(options.jsonFile);
    writeJson(file, { mode: options.mode, machine, revision: rev, options, seconds, ...result.json });
    log(`wrote ${file}`);
  }
  if (!result.ok) process.stderr.write(`\nbench: FAILED — ${result.failure ?? 'some answers were not 2xx'}; see above.\n`);
  return result.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`\nbench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
