import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { newId } from '../../src/domain/ids.js';
import { randomBase62 } from '../../src/domain/secrets.js';

/**
 * Real processes for the end-to-end suites: the `burrow serve` server and the `burrow` CLI,
 * run from source through tsx (`node --import tsx src/cli/main.ts …`), or, when `npm test` has
 * just built `dist/` (it sets BURROW_TEST_DIST=1), as installed: `node dist/cli/main.js …`,
 * which starts in half the time.
 *
 * Every child and temporary directory made here is tracked; `cleanupProcesses()` (call it in an
 * `after` hook) kills what is left, and a last-resort `exit` handler does the same should the
 * test process end without it, so no child outlives its test run.
 */

/** The repository root, found from this file rather than the working directory. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI_ARGS = process.env.BURROW_TEST_DIST === '1' ? ['dist/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts'];
/** The same, from any working directory. */
export const CLI_ARGS_ANYWHERE =
  process.env.BURROW_TEST_DIST === '1'
    ? [join(PROJECT_ROOT, 'dist/cli/main.js')]
    : ['--import', import.meta.resolve('tsx'), join(PROJECT_ROOT, 'src/cli/main.ts')];

/** Variables burrow reads; removed from the inherited environment so the caller's shell cannot leak in. */
const BURROW_VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'PUBLIC_URL',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'BOOTSTRAP_API_KEY',
  'RATE_LIMIT_PER_MINUTE',
  'MAX_POLICY_RULES',
  'DB_POOL_SIZE',
  'DB_STATEMENT_TIMEOUT_MS',
  'REQUEST_TIMEOUT_MS',
  'HEADERS_TIMEOUT_MS',
  'KEEP_ALIVE_TIMEOUT_MS',
  'SHUTDOWN_GRACE_MS',
  'AGENT_PORT',
  'AGENT_TLS_CERT',
  'AGENT_TLS_KEY',
  'AGENT_HOSTNAME',
  'TLS_DIR',
  'EDGE_HOST',
  'EDGE_HTTP_PORT',
  'EDGE_TLS_PORT',
  'EDGE_TCP_PORTS',
  'EDGE_DOMAIN',
  'EDGE_PUBLIC_HOST',
  'EDGE_PUBLIC_HTTP_PORT',
  'EDGE_PUBLIC_TLS_PORT',
  'EDGE_TLS_CERT',
  'EDGE_TLS_KEY',
  'EDGE_TLS_CERTS_DIR',
  'MAX_SESSIONS_PER_ACCOUNT',
  'MAX_ENDPOINTS_PER_SESSION',
  'REGION',
  // Set by node:test in each test file's process; nothing below us should see it.
  'NODE_TEST_CONTEXT',
];

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** SIGKILLs every child still running and removes the temporary directories. */
export async function cleanupProcesses(): Promise<void> {
  await Promise.all([...children].map((child) => killChild(child)));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
  await dropSchemas();
}

/** A fresh temporary directory, removed by `cleanupProcesses()`. */
export function makeTempDir(prefix = 'burrow-e2e-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/**
 * A fresh database for one server: a SQLite file in a new temporary directory, or, when
 * TEST_DATABASE_URL names PostgreSQL, a new schema there (dropped by `cleanupProcesses()`).
 */
export function tempDatabaseUrl(): string {
  const postgres = process.env.TEST_DATABASE_URL;
  if (!postgres) return `sqlite:${join(makeTempDir(), 'burrow.db')}`;
  const url = new URL(postgres);
  const schema = `e2e_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  url.searchParams.set('schema', schema);
  schemas.add(schema);
  return url.toString();
}

const schemas = new Set<string>();

async function dropSchemas(): Promise<void> {
  const postgres = process.env.TEST_DATABASE_URL;
  if (!postgres || schemas.size === 0) return;
  const client = new pg.Client({ connectionString: postgres });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`drop schema if exists ${schema} cascade`);
    schemas.clear();
  } finally {
    await client.end();
  }
}

/** A well-formed API key whose first 27 characters are a valid KSUID (SPEC §4). */
export function generateApiKey(): string {
  const ksuid = newId('ak').id.slice('ak_'.length);
  return `${ksuid}_${randomBase62(21)}`;
}

/** This process's environment without burrow's variables, then `env` (`undefined` removes one). */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of BURROW_VARIABLES) delete base[name];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete base[name];
    else base[name] = value;
  }
  return base;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

async function killChild(child: ChildProcess): Promise<Exit> {
  const exited = exitOf(child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  return exited;
}

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Collects a stream's lines into `into`, calling `onLine` for each. */
function collectLines(stream: NodeJS.ReadableStream, into: string[], onLine?: (line: string) => void): void {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  lines.on('line', (line) => {
    into.push(line);
    onLine?.(line);
  });
}

export interface BootstrapInfo {
  accountId: string;
  userId: string;
  apiKeyId: string;
}

export interface ServerProcess {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  baseUrl: string;
  /** The admin API key: the BOOTSTRAP_API_KEY given to the process (or the `apiKey` option). */
  apiKey: string;
  databaseUrl: string;
  child: ChildProcess;
  /** Every line the process wrote so far (JSON log lines on stdout). */
  stdout: string[];
  stderr: string[];
  /** What the bootstrap log line said, when this start bootstrapped the database. */
  bootstrap: BootstrapInfo | undefined;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  /** Sends `signal` (default SIGTERM) and resolves with the exit. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
  /** SIGKILL, then resolves with the exit. */
  kill(): Promise<Exit>;
  /** Parsed stdout JSON log lines (lines that are not JSON are skipped). */
  logs(): Record<string, unknown>[];
}

export interface StartOptions {
  /** Default: a SQLite file in a fresh temporary directory. */
  databaseUrl?: string;
  /**
   * The BOOTSTRAP_API_KEY to pass. Default: a freshly generated key. `null` passes none (the
   * first start then prints a generated key to stderr). On a restart of an existing database pass
   * the original key: it is only used on the first start, but `apiKey` reports it.
   */
  bootstrapApiKey?: string | null;
  /** Extra environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** How long to wait for the address line and a 200 from /readyz. */
  readyTimeoutMs?: number;
  /** A test (`t`) whose end SIGKILLs the process, should the test not have stopped it itself. */
  context?: { after(fn: () => unknown): void };
  /** The working directory (default: the project's), against which relative paths such as ./data resolve. */
  cwd?: string;
}

/**
 * Starts `burrow serve` as a child process on a free port (PORT=0; the address is read from the
 * "burrow is listening" log line) and waits until /readyz answers 200.
 */
export async function startServer(options: StartOptions = {}): Promise<ServerProcess> {
  const databaseUrl = options.databaseUrl ?? tempDatabaseUrl();
  const apiKey = options.bootstrapApiKey === undefined ? generateApiKey() : options.bootstrapApiKey;
  const readyTimeoutMs = options.readyTimeoutMs ?? 45_000;
  const env = childEnv({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'info',
    // The data plane stays off unless a test asks for it (tunnel suites pass their own ports).
    AGENT_PORT: '0',
    EDGE_HTTP_PORT: '0',
    EDGE_TLS_PORT: '0',
    ...(apiKey === null ? {} : { BOOTSTRAP_API_KEY: apiKey }),
    ...options.env,
  });

  const child = track(
    spawn(process.execPath, [...(options.cwd ? CLI_ARGS_ANYWHERE : CLI_ARGS), 'serve'], { cwd: options.cwd ?? PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  const exited = exitOf(child);
  options.context?.after(() => killChild(child));
  const stdout: string[] = [];
  const stderr: string[] = [];
  let bootstrap: BootstrapInfo | undefined;
  let announce: (address: string) => void = () => {};
  const announced = new Promise<string>((resolve) => (announce = resolve));
  collectLines(child.stdout!, stdout, (line) => {
    const entry = parseJson(line);
    if (!entry) return;
    if (entry.msg === 'burrow is listening' && typeof entry.address === 'string') announce(entry.address);
    if (entry.msg === 'bootstrapped an empty database') {
      bootstrap = { accountId: String(entry.account_id), userId: String(entry.user_id), apiKeyId: String(entry.api_key_id) };
    }
  });
  collectLines(child.stderr!, stderr);

  const describe = () => `\n--- stdout ---\n${stdout.join('\n')}\n--- stderr ---\n${stderr.join('\n')}`;
  const deadline = Date.now() + readyTimeoutMs;
  try {
    const address = await raceWithExit(announced, exited, deadline, 'announce its address');
    const baseUrl = address.replace(/\/+$/, '');
    await raceWithExit(waitReady(baseUrl, deadline), exited, deadline, 'answer 200 on /readyz');
    const server: ServerProcess = {
      baseUrl,
      apiKey: apiKey ?? '',
      databaseUrl,
      child,
      stdout,
      stderr,
      get bootstrap() {
        return bootstrap;
      },
      exited,
      stop: (signal: NodeJS.Signals = 'SIGTERM') => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        return exited;
      },
      kill: () => killChild(child),
      logs: () => stdout.map(parseJson).filter((entry): entry is Record<string, unknown> => entry !== undefined),
    };
    return server;
  } catch (error) {
    await killChild(child);
    throw new Error(`${error instanceof Error ? error.message : String(error)}${describe()}`);
  }
}

async function raceWithExit<T>(work: Promise<T>, exited: Promise<Exit>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`burrow serve did not ${what} in time`)), Math.max(0, deadline - Date.now()));
  });
  const died = exited.then((exit): never => {
    throw new Error(`burrow serve exited (code ${exit.code}, signal ${exit.signal}) before it would ${what}`);
  });
  try {
    return await Promise.race([work, timeout, died]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitReady(baseUrl: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not accepting yet
    }
    if (Date.now() > deadline) return; // raceWithExit's timer reports it
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function parseJson(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** `Date.now()` when the process had exited: what happened in it happened before this. */
  endedAt: number;
}

export interface CliOptions {
  /** Sets DATABASE_URL for the run. */
  databaseUrl?: string;
  /** Extra environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
}

/** Runs `burrow <args>` (see CLI_ARGS) to completion. */
/** `burrow <args>` as a child with piped stdout and stderr, for tests that drive the pipes themselves. */
export function spawnCli(args: string[], options: CliOptions = {}): ChildProcess {
  const env = childEnv({ ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}), ...options.env });
  return track(spawn(process.execPath, [...CLI_ARGS, ...args], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
}

export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const env = childEnv({ ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}), ...options.env });
  const child = track(spawn(process.execPath, [...CLI_ARGS, ...args], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr!.on('data', (chunk: Buffer) => err.push(chunk));
  const timeoutMs = options.timeoutMs ?? 45_000;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  let endedAt = 0;
  child.once('exit', () => (endedAt = Date.now()));
  const closed = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const { code, signal } = await closed.finally(() => clearTimeout(timer));
  const result = { code, signal, endedAt, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
  if (signal === 'SIGKILL') throw new Error(`burrow ${args.join(' ')} did not finish in ${timeoutMs} ms\n${result.stderr}`);
  return result;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for an empty body. */
  body: T;
  text: string;
}

/**
 * One API call with `Authorization: Bearer <key>` (default: the server's admin key; null sends
 * none) and `Service-Version: 2`; an object body is sent as JSON.
 */
export async function api<T = any>(
  server: Pick<ServerProcess, 'baseUrl' | 'apiKey'>,
  method: string,
  path: string,
  options: { body?: unknown; key?: string | null; signal?: AbortSignal } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { 'service-version': '2' };
  const key = options.key === undefined ? server.apiKey : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
    signal: options.signal ?? AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text === '' ? undefined : JSON.parse(text)) as T, text };
}
