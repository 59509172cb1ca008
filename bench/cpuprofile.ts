import { readFileSync } from 'node:fs';
import { PROJECT_ROOT } from './processes.js';
import { table } from './report.js';

/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went: by component of a
 * request (the rules below), self time per package and per function, and inclusive time per
 * function (each function counted once per sample). Samples before the first HTTP request
 * (start-up) are left out.
 *
 * Caveat: the socket `writev` shows up larger here than in `perf` (which puts all kernel time
 * of the server at ~13% under the get load); the bare baseline shows the same, so read it as a
 * cost every Node server pays, not as burrow's.
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Share {
  name: string;
  ms: number;
  /** Share of busy (non-idle) time. */
  pct: number;
}

export interface ProfileSummary {
  /** Start-up samples (before the first request), left out. */
  skippedMs: number;
  wallMs: number;
  idleMs: number;
  busyMs: number;
  byComponent: Share[];
  byPackage: Share[];
  selfFunctions: Share[];
  inclusiveFunctions: Share[];
}

export interface Frame {
  name: string;
  url: string;
  pkg: string;
  /** `name  place` for functions, the bare name for (program) and the like. */
  label: string;
}

const SPECIAL = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

/** `fastify`, `@fastify/…`, `kysely`, …; `node (core)` for node: URLs; `burrow` for our dist/ or src/. */
export function packageOf(url: string): string {
  if (url === '') return '';
  if (url.startsWith('node:')) return 'node (core)';
  const modules = [...url.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)];
  if (modules.length > 0) return modules[modules.length - 1]![1]!;
  const path = url.replace(/^file:\/\//, '');
  if (path.startsWith(PROJECT_ROOT) && /\/(dist|src)\//.test(path)) return 'burrow';
  return 'other';
}

/** Our files as src/… paths (dist/x.js → src/x.ts), others relative to node_modules. */
export function placeOf(frame: { url: string; lineNumber: number }): string {
  const path = frame.url.replace(/^file:\/\//, '');
  let where: string;
  if (path.startsWith(PROJECT_ROOT)) {
    where = path.slice(PROJECT_ROOT.length).replace(/^dist\/(.*)\.js$/, 'src/$1.ts');
  } else {
    const i = path.lastIndexOf('node_modules/');
    where = i >= 0 ? path.slice(i + 'node_modules/'.length) : path;
  }
  // lineNumber is 0-based; for dist/ files it is the compiled line, close to the source line.
  return `${where}:${frame.lineNumber + 1}`;
}

const isSqliteCall = (f: Frame) => f.name === 'executeQuery' && f.url.endsWith('dialect/sqlite/sqlite-driver.js');
const inFile = (f: Frame, suffix: string) => f.url.endsWith(suffix);

interface ComponentRule {
  name: string;
  /** Matches the running function. */
  leaf?: (f: Frame) => boolean;
  /** Matches any function on the stack. */
  any?: (f: Frame) => boolean;
}

/**
 * The concerns of a request, recognised by a JavaScript function anywhere on the stack. The
 * first rule that matches wins, so specific concerns come before the frameworks that call them.
 */
const JS_COMPONENTS: ComponentRule[] = [
  { name: 'WAL fdatasync bookkeeping (storage/durability.ts)', any: (f) => inFile(f, 'storage/durability.js') },
  { name: 'metrics (prom-client, http/pipeline/metrics.ts)', any: (f) => f.pkg === 'prom-client' || inFile(f, 'http/pipeline/metrics.js') },
  { name: 'logging (pino: request child loggers, lines)', any: (f) => f.pkg === 'pino' || f.pkg.startsWith('@pinojs') || f.pkg === 'pino-std-serializers' },
  { name: 'operation id (genReqId → newId KSUID)', any: (f) => f.name === 'genReqId' && inFile(f, 'http/app.js') },
  { name: 'authentication (domain/auth.ts, sha256)', any: (f) => f.name === 'authenticate' && inFile(f, 'domain/auth.js') },
  { name: 'new credential id/token/hash (ids.ts, secrets.ts)', any: (f) => inFile(f, 'domain/ids.js') || inFile(f, 'domain/secrets.js') },
  { name: 'Kysely (build, compile, execute a query)', any: (f) => f.pkg === 'kysely' },
  { name: 'statement cache (storage/db.ts prepare)', any: (f) => inFile(f, 'storage/db.js') },
  { name: 'response serialization (fast-json-stringify)', any: (f) => f.pkg === 'fast-json-stringify' },
  { name: 'request body/query/validation (http/pipeline/body.ts, validation.ts)', any: (f) => inFile(f, 'http/pipeline/body.js') || inFile(f, 'http/pipeline/validation.js') },
  { name: 'routing (find-my-way)', any: (f) => f.pkg === 'find-my-way' },
];

/** Whatever no specific rule claimed, by the package of the innermost JavaScript function. */
const FALLBACK_COMPONENTS: ComponentRule[] = [
  { name: 'node core (http parser, streams, events, timers)', leaf: (f) => f.pkg === 'node (core)' },
  { name: 'fastify core (hooks, request/reply)', leaf: (f) => f.pkg === 'fastify' || f.pkg.startsWith('@fastify') || f.pkg === 'avvio' },
  { name: 'burrow, other (hooks, handlers, present, services)', leaf: (f) => f.pkg === 'burrow' },
];

const SQLITE = 'SQLite itself (better-sqlite3 stmt.all/run, native)';

/** The V8 profile's order: SQLite (the leaf), the concerns, then what the leaf tells. */
const COMPONENTS: ComponentRule[] = [
  { name: SQLITE, leaf: isSqliteCall },
  ...JS_COMPONENTS,
  { name: 'socket write (writev syscall: loopback TCP)', leaf: (f) => f.name === 'writev' && f.url === '' },
  { name: 'garbage collection', leaf: (f) => f.name === '(garbage collector)' },
  { name: '(program): V8/native without a JS stack', leaf: (f) => f.name === '(program)' },
  { name: 'promise/microtask plumbing', leaf: (f) => (f.name === 'runMicrotasks' && f.url === '') || f.name === 'processTicksAndRejections' },
  { name: 'node core (http parser, streams, events, timers)', leaf: (f) => f.pkg === 'node (core)' || (f.url === '' && !SPECIAL.has(f.name)) },
  ...FALLBACK_COMPONENTS,
];

function componentOf(rules: ComponentRule[], stack: Frame[]): string | undefined {
  for (const rule of rules) {
    if (rule.leaf?.(stack[0]!) || (rule.any && stack.some(rule.any))) return rule.name;
  }
  return undefined;
}

export function analyseProfile(file: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }

  const frames = new Map<number, Frame>();
  for (const node of profile.nodes) {
    const { functionName, url } = node.callFrame;
    const name = functionName || '(anonymous)';
    let label: string;
    let pkg: string;
    if (SPECIAL.has(functionName)) {
      label = pkg = functionName;
    } else if (url === '') {
      // A native (C++) function called from JS, e.g. the socket's writev.
      const caller = packageOf(byId.get(parent.get(node.id) ?? -1)?.callFrame.url ?? '');
      label = `${name} [native, called from ${caller || 'native'}]`;
      pkg = `${caller || 'V8/node'} (native)`;
    } else {
      label = `${name}  ${placeOf(node.callFrame)}`;
      pkg = packageOf(url);
    }
    const frame: Frame = { name: functionName, url, pkg, label };
    if (isSqliteCall(frame)) {
      // better-sqlite3's stmt.all()/run() get no frame of their own: this self time is SQLite's.
      frame.label = `SQLite: stmt.all/run in Kysely's SqliteConnection.executeQuery  ${placeOf(node.callFrame)}`;
      frame.pkg = 'better-sqlite3 (native SQLite)';
    }
    frames.set(node.id, frame);
  }

  const stackCache = new Map<number, Frame[]>();
  const stackOf = (id: number): Frame[] => {
    let stack = stackCache.get(id);
    if (!stack) {
      stack = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(frames.get(at)!);
      stackCache.set(id, stack);
    }
    return stack;
  };

  // Count from the first sample inside node:_http_server's parserOnIncoming (once per request).
  let first = profile.samples.findIndex((id) =>
    stackOf(id).some((f) => f.name === 'parserOnIncoming' && f.url === 'node:_http_server'),
  );
  if (first < 0) first = 0;

  const self = new Map<string, number>();
  const packages = new Map<string, number>();
  const components = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let skipped = 0;
  let wall = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample stands for the time until the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (i < first) {
      skipped += us;
      continue;
    }
    wall += us;
    const stack = stackOf(profile.samples[i]!);
    const leaf = stack[0]!;
    if (leaf.name === '(idle)') {
      idle += us;
      continue;
    }
    add(self, leaf.label, us);
    add(packages, leaf.pkg, us);
    add(components, componentOf(COMPONENTS, stack) ?? `other: ${leaf.pkg || leaf.name}`, us);
    for (const label of new Set(stack.map((f) => f.label))) if (!SPECIAL.has(label)) add(inclusive, label, us);
  }
  const busy = wall - idle;
  const shares = (map: Map<string, number>, n: number): Share[] =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: us / 1000, pct: busy > 0 ? (100 * us) / busy : 0 }));
  return {
    skippedMs: skipped / 1000,
    wallMs: wall / 1000,
    idleMs: idle / 1000,
    busyMs: busy / 1000,
    byComponent: shares(components, 40),
    byPackage: shares(packages, 30),
    selfFunctions: shares(self, top),
    inclusiveFunctions: shares(inclusive, top * 2),
  };
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

/**
 * The tables: by component (with µs per request when `requests` is known), self time by
 * package, self time by function, inclusive time by function.
 */
export function componentTable(title: string, shares: Share[], totalMs: number, requests?: number): string {
  const perRequest = (ms: number) => (requests ? ((ms * 1000) / requests).toFixed(1) : '—');
  return table([
    [title, 'ms', '%', 'µs/request'],
    ...shares.map((s) => [s.name, s.ms.toFixed(0), s.pct.toFixed(1), perRequest(s.ms)]),
    ['total', totalMs.toFixed(0), '100.0', perRequest(totalMs)],
  ]);
}

export function describeProfile(profile: ProfileSummary, requests?: number): string {
  const shareTable = (title: string, shares: Share[]) =>
    table([[title, 'ms', '%'], ...shares.map((s) => [s.name, s.ms.toFixed(0), s.pct.toFixed(1)])]);
  return [
    componentTable('busy (wall) time by component, V8 profile', profile.byComponent, profile.busyMs, requests),
    shareTable('self time by package', profile.byPackage.slice(0, 16)),
    shareTable('self time by function', profile.selfFunctions.slice(0, 25)),
    shareTable('inclusive time by function (each counted once per sample)', profile.inclusiveFunctions.slice(0, 45)),
  ].join('\n\n');
}
