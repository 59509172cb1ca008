import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { listeningPorts } from './procfs.js';

/**
 * Every child process and temporary directory of a bench run. Servers are SIGKILLed and
 * directories removed on normal exit, on an uncaught error and on SIGINT/SIGTERM/SIGHUP, so no
 * child outlives the run. Should the bench itself be SIGKILLed, servers are started through
 * `setpriv --pdeathsig KILL` where it exists (the kernel kills them with their parent), and the
 * baseline and load processes also exit when their stdin/IPC channel closes.
 */
export const PROJECT_ROOT = fileURLToPath(new URL('../', import.meta.url));
const BENCH_DIR = fileURLToPath(new URL('./', import.meta.url));

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let keepTempDirs = false;

export function keepTemporaryFiles(): void {
  keepTempDirs = true;
}

function cleanupNow(): void {
  for (const child of children) if (isRunning(child)) child.kill('SIGKILL');
  if (!keepTempDirs) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

process.on('exit', cleanupNow);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping every child process\n`);
    cleanupNow();
    process.exit(130);
  });
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

const PDEATHSIG = spawnSync('setpriv', ['--pdeathsig', 'KILL', 'true'], { stdio: 'ignore' }).status === 0;

/** `node <args>`, under `setpriv --pdeathsig KILL` when available (it execs node: same pid). */
function spawnNode(args: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  return PDEATHSIG
    ? spawn('setpriv', ['--pdeathsig', 'KILL', process.execPath, ...args], options)
    : spawn(process.execPath, args, options);
}

/** Unless --no-pin: the CPU lists (taskset syntax) for servers and for the load generator. */
let pinning: { server: string; load: string } | undefined;

export function pinCpus(server: string, load: string): void {
  pinning = { server, load };
}

/** Sets the CPU affinity of every thread of a just-started child (threads made later inherit it). */
function pin(child: ChildProcess, role: 'server' | 'load'): void {
  if (!pinning || child.pid === undefined) return;
  const result = spawnSync('taskset', ['-a', '-cp', pinning[role], String(child.pid)], { stdio: 'ignore' });
  // A child that already died is reported by whoever waits for it; say only that pinning failed.
  if (result.status !== 0) process.stderr.write(`bench: taskset could not pin pid ${child.pid} to CPUs ${pinning[role]}\n`);
}

export function makeTempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-bench-'));
  tempDirs.add(dir);
  return dir;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function exitOf(child: ChildProcess): Promise<Exit> {
  if (!isRunning(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** SIGTERM (burrow shuts down gracefully and, under --cpu-prof, writes its profile), SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<Exit> {
  const exited = exitOf(child);
  if (!isRunning(child)) return exited;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Variables burrow reads: never inherited from the caller's shell. */
const BURROW_VARIABLES = [
  'PORT', 'HOST', 'DATABASE_URL', 'PUBLIC_URL', 'TRUST_PROXY', 'LOG_LEVEL', 'BOOTSTRAP_API_KEY',
  'RATE_LIMIT_PER_MINUTE', 'MAX_POLICY_RULES', 'DB_POOL_SIZE', 'DB_STATEMENT_TIMEOUT_MS',
  'REQUEST_TIMEOUT_MS', 'HEADERS_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS', 'SHUTDOWN_GRACE_MS', 'NODE_OPTIONS',
  'AGENT_PORT', 'AGENT_TLS_CERT', 'AGENT_TLS_KEY', 'AGENT_HOSTNAME', 'TLS_DIR', 'EDGE_HOST', 'EDGE_HTTP_PORT',
  'EDGE_TLS_PORT', 'EDGE_TCP_PORTS', 'EDGE_DOMAIN', 'EDGE_PUBLIC_HOST', 'EDGE_PUBLIC_HTTP_PORT', 'EDGE_PUBLIC_TLS_PORT',
  'EDGE_TLS_CERT', 'EDGE_TLS_KEY', 'MAX_SESSIONS_PER_ACCOUNT', 'MAX_ENDPOINTS_PER_SESSION', 'REGION',
];

/** The data plane's listeners, off unless a mode turns them on (else AGENT_PORT would default to 4443). */
const DATA_PLANE_OFF = { AGENT_PORT: '0', EDGE_HTTP_PORT: '0', EDGE_TLS_PORT: '0' };

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of BURROW_VARIABLES) delete env[name];
  return { ...env, ...extra };
}

/** A server under test: its base URL and pid (for /proc sampling). */
export interface ServerChild {
  name: string;
  baseUrl: string;
  pid: number;
  child: ChildProcess;
  /** Every stdout/stderr line so far (shown when it dies). */
  output: string[];
  stop(): Promise<Exit>;
}

/** How burrow is launched: compiled dist/ (the default) or src/ through tsx. */
export interface BurrowCommand {
  args: string[];
  describe: string;
}

export function burrowCommand(fromSource: boolean): BurrowCommand {
  return fromSource
    ? { args: ['--no-memory-reducer', '--import', 'tsx', 'src/cli/main.ts', 'serve'], describe: 'node --no-memory-reducer --import tsx src/cli/main.ts serve' }
    : // as `npm start` runs it (README, Performance: why the flag)
      { args: ['--no-memory-reducer', 'dist/cli/main.js', 'serve'], describe: 'node --no-memory-reducer dist/cli/main.js serve' };
}

/** burrow's default, so the figures include the one log line per request a real deployment writes. */
export const BURROW_LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';

export interface BurrowStart {
  name: string;
  command: BurrowCommand;
  databaseUrl: string;
  apiKey: string;
  /** Flags for node itself, before the script (e.g. --cpu-prof). */
  nodeFlags?: string[];
  /** More variables (the data plane's ports, TLS_DIR …); the data plane is off without them. */
  env?: Record<string, string>;
  /** Where its log file goes; default: beside the SQLite file. */
  logDir?: string;
}

/**
 * `burrow serve` on PORT=0 with a SQLite file, RATE_LIMIT_PER_MINUTE=0 and LOG_LEVEL=info. Its
 * log goes to a file beside the database (a pipe would make this process, which is not pinned,
 * parse a line per request); the port is read from /proc: the listening TCP socket the process
 * holds that answers /readyz 200.
 */
export async function startBurrow(options: BurrowStart): Promise<ServerChild> {
  const env = cleanEnv({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: options.databaseUrl,
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: BURROW_LOG_LEVEL,
    BOOTSTRAP_API_KEY: options.apiKey,
    ...DATA_PLANE_OFF,
    ...options.env,
  });
  // The data plane's own ports are not the API (and probing a TLS port over HTTP only waits).
  const dataPlanePorts = new Set(['AGENT_PORT', 'EDGE_HTTP_PORT', 'EDGE_TLS_PORT'].map((name) => Number(env[name])));
  const logFile = openSync(join(options.logDir ?? dirname(options.databaseUrl.slice('sqlite:'.length)), `${options.name}.log`), 'a');
  const child = track(
    spawnNode([...(options.nodeFlags ?? []), ...options.command.args], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', logFile, 'pipe'],
    }),
  );
  closeSync(logFile);
  pin(child, 'server');
  const output: string[] = [];
  collectLines(child, output);
  const baseUrl = await waitFor(options.name, child, output, 60_000, async () => {
    for (const port of listeningPorts(child.pid!)) {
      if (dataPlanePorts.has(port)) continue;
      const url = `http://127.0.0.1:${port}`;
      if (await isReady(url)) return url;
    }
    return undefined;
  });
  return { name: options.name, baseUrl, pid: child.pid!, child, output, stop: () => stopChild(child) };
}

/** The bare node:http baseline (bench/baseline-server.ts) answering every request with `body`. */
export function startBaseline(body: string, nodeFlags: string[] = []): Promise<ServerChild> {
  return startScriptServer('baseline', join(BENCH_DIR, 'baseline-server.ts'), { BASELINE_BODY: body }, nodeFlags);
}

/**
 * A TypeScript server script run through tsx that prints `listening <url>` once ready and exits
 * when its stdin closes (the baseline, the tunnel benchmarks' servers and relays).
 */
export async function startScriptServer(name: string, script: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<ServerChild> {
  return startNodeProcess(name, [...nodeFlags, '--import', 'tsx', script], env, (line) => /^listening ([a-z]+:\/\/\S+)$/.exec(line)?.[1]);
}

/**
 * `node <args>` as a server-side child (pinned with the servers), ready once `ready` returns a
 * value for one of its output lines (the value becomes `baseUrl`), or, with `probe`, once that
 * resolves to one. Its stdin stays open, so scripts can exit when it closes, i.e. when we are gone.
 */
export async function startNodeProcess(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: (line: string) => string | undefined,
  options: { timeoutMs?: number; probe?: () => Promise<string | undefined> } = {},
): Promise<ServerChild> {
  const child = track(spawnNode(args, { cwd: PROJECT_ROOT, env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] }));
  pin(child, 'server');
  const output: string[] = [];
  let address: string | undefined;
  collectLines(child, output, (line) => {
    address ??= ready(line);
  });
  const baseUrl = await waitFor(name, child, output, options.timeoutMs ?? 30_000, async () => address ?? (await options.probe?.()));
  return { name, baseUrl, pid: child.pid!, child, output, stop: () => stopChild(child) };
}

/** The load generator: a separate process (bench/load-worker.ts: autocannon; or another worker script). */
export function forkLoadWorker(script = join(BENCH_DIR, 'load-worker.ts')): ChildProcess {
  const child = track(
    fork(script, [], {
      cwd: PROJECT_ROOT,
      execArgv: ['--import', 'tsx'],
      env: cleanEnv({}),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  pin(child, 'load');
  return child;
}

/** Runs a command to completion with inherited output; resolves with its exit code. */
export function runToEnd(command: string, args: string[]): Promise<number | null> {
  const child = track(spawn(command, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'inherit', 'inherit'] }));
  return exitOf(child).then((exit) => exit.code);
}

function collectLines(child: ChildProcess, into: string[], onLine?: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      into.push(line);
      if (into.length > 2000) into.shift();
      onLine?.(line);
    });
  }
}

async function waitFor<T>(
  name: string,
  child: ChildProcess,
  output: string[],
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!isRunning(child)) {
      throw new Error(`${name} exited (code ${child.exitCode}, signal ${child.signalCode}) before it was ready:\n${output.join('\n')}`);
    }
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} was not ready within ${timeoutMs} ms:\n${output.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function isReady(baseUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}
