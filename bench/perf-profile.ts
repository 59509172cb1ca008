import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { packageOf, placeOf, type Frame, type Share } from './cpuprofile.js';
import { exitOf } from './processes.js';

/**
 * CPU time by component from Linux `perf` (on-CPU samples only), as a cross-check of the V8
 * profile: V8 samples wall-clock time, so a thread that is preempted or blocked inside a
 * syscall (SQLite's fcntl locks, the socket writev) charges that time to the function it was
 * in. perf counts only cycles actually spent. The server runs with --perf-basic-prof and
 * --interpreted-frames-native-stack so JavaScript frames have names, and perf unwinds with
 * frame pointers (V8 keeps them).
 */
export const PERF_NODE_FLAGS = ['--perf-basic-prof', '--interpreted-frames-native-stack'];
const FREQUENCY_HZ = 999;

export function perfUsable(): boolean {
  const result = spawnSync('perf', ['record', '-q', '-o', '/dev/null', '--', 'true'], { stdio: 'ignore' });
  return result.status === 0;
}

/** Starts `perf record -g` on every thread of `pid`; `stop()` ends it and resolves when the file is written. */
export function recordPerf(pid: number, file: string): { stop(): Promise<void> } {
  const child = spawn('perf', ['record', '-q', '-F', String(FREQUENCY_HZ), '-g', '-p', String(pid), '-o', file], { stdio: 'ignore' });
  return {
    stop: async () => {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exitOf(child);
      clearTimeout(timer);
    },
  };
}

export interface PerfSummary {
  /** On-CPU milliseconds of the main (event-loop) thread and of all other threads. */
  mainMs: number;
  otherThreadsMs: number;
  /** Other threads by name (GC helpers, libuv's pool running fdatasync, …). */
  otherThreads: Share[];
  /** Main thread by component; pct of the main thread's CPU time. */
  byComponent: Share[];
  /** Main thread by where the CPU was at the sample: kernel, SQLite, V8/node, JIT code. */
  byDso: Share[];
}

interface PerfFrame extends Frame {
  dso: string;
  /** A JavaScript function (from the perf map), not C++ or a builtin. */
  js: boolean;
}

/** `JS:*name file:///…:line:col` (and older LazyCompile:/Function:) from --perf-basic-prof. */
const JS_SYMBOL = /^(?:JS|LazyCompile|Function):[*~^+]?(\S*) (\S+?)(?::(\d+):\d+)?$/;

function frameOf(symbol: string, dso: string): PerfFrame {
  const js = JS_SYMBOL.exec(symbol);
  if (js) {
    const url = js[2]!;
    const line = Number(js[3] ?? 1) - 1;
    const name = js[1] || '(anonymous)';
    return { name, url, pkg: packageOf(url), label: `${name}  ${placeOf({ url, lineNumber: line })}`, dso, js: true };
  }
  return { name: symbol, url: '', pkg: '', label: `${symbol} (${dso.split('/').pop()})`, dso, js: false };
}

const isGc = (f: PerfFrame) => !f.js && /Heap::|Scavenge|MarkCompact|Sweeper|ConcurrentMarking|GCTracer|MinorMC/.test(f.name);
const isSqlite = (f: PerfFrame) => f.dso.endsWith('better_sqlite3.node');
const isKernel = (f: PerfFrame) => f.dso.includes('kernel');
/** OpenSSL, linked into the node binary: ciphers, record layer, its BIOs. */
const isOpenSsl = (f: PerfFrame) => !f.js && /^(_?aesni|_?gcm_|ssl3_|SSL_|EVP_|ossl_|BIO_|tls1?3?_|CRYPTO_|aes_|ChaCha20|Poly1305|sha\d|SHA\d|_?x25519|bn_|BN_)/.test(f.name);

/**
 * The coarse component of one on-CPU sample of the main thread (stack[0] is where the CPU was).
 * JavaScript is not split further here: TurboFan inlines functions (an inlined frame has no
 * address of its own) and the perf map goes stale when V8 moves or frees code, so per-function
 * attribution is the V8 profile's job; this table says how much is SQLite, kernel, GC and JS.
 */
function classify(stack: PerfFrame[]): string {
  if (stack.some(isSqlite)) return 'SQLite (better_sqlite3.node and the syscalls it makes: file locks, reads)';
  if (stack.some(isGc)) return 'garbage collection';
  if (isOpenSsl(stack[0]!)) return 'TLS: OpenSSL itself (encryption, records; the agent link and HTTPS)';
  const hasJs = stack.some((f) => f.js);
  if (isKernel(stack[0]!)) return hasJs ? 'kernel, called from JavaScript (socket writev/read, other syscalls)' : 'kernel, from the event loop (epoll, socket reads)';
  if (!hasJs) return 'node/V8/libuv with no JavaScript on the stack (llhttp parser, microtask runner)';
  const leaf = stack[0]!;
  if (leaf.js) return `JavaScript: ${leaf.pkg === 'burrow' ? 'burrow' : leaf.pkg === 'node (core)' ? 'node core' : 'libraries'} (the function itself; split by the V8 tables)`;
  return 'V8 builtins/runtime and node C++ called from JavaScript (split by the V8 tables)';
}

function dsoGroup(f: PerfFrame): string {
  if (isKernel(f)) return 'kernel';
  if (isSqlite(f)) return 'better_sqlite3.node (SQLite)';
  if (f.js) return 'JIT/interpreted JavaScript';
  if (f.dso.includes('perf-')) return 'JIT/interpreted JavaScript';
  if (f.dso.endsWith('/node') || f.dso === 'node') return 'node binary (V8, builtins, node C++)';
  return f.dso.split('/').pop() ?? f.dso;
}

/** Reads `perf script` of the recording; `pid` names the main thread. Removes /tmp/perf-<pid>.map afterwards. */
export async function analysePerf(file: string, pid: number): Promise<PerfSummary> {
  const script = spawn('perf', ['script', '-i', file, '-F', 'comm,tid,ip,sym,dso'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const components = new Map<string, number>();
  const dsos = new Map<string, number>();
  const threads = new Map<string, number>();
  let main = 0;
  let others = 0;
  let header: { comm: string; tid: number } | undefined;
  let stack: PerfFrame[] = [];
  const finish = () => {
    if (!header || stack.length === 0) return;
    if (header.tid === pid) {
      main++;
      add(components, classify(stack));
      add(dsos, dsoGroup(stack[0]!));
    } else {
      others++;
      add(threads, header.comm);
    }
  };
  const lines = createInterface({ input: script.stdout!, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') {
      finish();
      header = undefined;
      stack = [];
      continue;
    }
    const frame = /^\s+[0-9a-f]+ (.*) \((.*)\)$/.exec(line);
    if (frame) {
      stack.push(frameOf(frame[1]!, frame[2]!));
      continue;
    }
    const head = /^\s*(.*?)\s+(\d+)\s*$/.exec(line);
    if (head) header = { comm: head[1]!, tid: Number(head[2]) };
  }
  finish();
  await exitOf(script);
  rmSync(`/tmp/perf-${pid}.map`, { force: true });

  const ms = (samples: number) => (samples * 1000) / FREQUENCY_HZ;
  const shares = (map: Map<string, number>, total: number): Share[] =>
    [...map].sort((a, b) => b[1] - a[1]).map(([name, n]) => ({ name, ms: ms(n), pct: total > 0 ? (100 * n) / total : 0 }));
  return {
    mainMs: ms(main),
    otherThreadsMs: ms(others),
    otherThreads: shares(threads, main + others),
    byComponent: shares(components, main),
    byDso: shares(dsos, main),
  };
}

function add(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
