import type { BenchOptions } from '../args.js';
import type { LoadGenerator, LoadResult } from '../load.js';
import { cpuSecondsOf, memoryOf } from '../procfs.js';
import { median } from '../stats.js';
import { fmt, table, type Target } from '../report.js';
import { alternateWith, failures, pairedRatio, type Contestant, type Figures, type RoundSettings } from '../rounds.js';
import type { Route } from './paths.js';
import type { TcpLoadGenerator, TcpTarget } from './tcp-load.js';

/** Everything a scenario measures over. Routes a path does not have (or that failed the probe) are absent. */
export interface Lanes {
  /** Path name → route to the local TCP server (direct, TCP relay, TLS relay pair, burrow). */
  tcp: Map<string, Route>;
  /** Path name → route to the local HTTP server (… and localtunnel). */
  http: Map<string, Route>;
  /** The local TLS server: direct, through a tls endpoint, through a TLS edge. */
  tls: Map<string, Route>;
  /** burrow's TCP endpoint with the 25-rule policy. */
  tcpPolicy?: Route;
  /** burrow's http endpoint with the ten-rule on_http_request policy (same local server as `http`'s). */
  httpPolicy?: Route;
  /** The account's capture switch and the plain http endpoint's captured requests (traffic inspector). */
  capture?: CaptureControl;
  /** Why a burrow route is missing (the probe's answer, a refused bind, no tunnel groups). */
  missing: Map<string, string>;
  localPids: { tcp: number; http: number; tls: number };
  /** pid → what it is (burrow, agent, local server …), for the CPU split. */
  processNames: Map<number, string>;
}

export interface CaptureControl {
  set(capture: 'off' | 'heads'): Promise<void>;
  /** Requests the inspector holds for burrow's http endpoint (up to 100). */
  captured(): Promise<number>;
}

export interface ScenarioTools {
  options: BenchOptions;
  settings: RoundSettings;
  load: LoadGenerator;
  tcp: TcpLoadGenerator;
  log(line: string): void;
}

export interface ScenarioOutcome {
  name: string;
  describe: string;
  /** The scenario's table, its notes and its targets, printed as it finishes. */
  text: string;
  targets: Target[];
  /** Ratios to direct per path, for the summary. */
  ratios: Record<string, number>;
  json: Record<string, unknown>;
}

export interface Lane extends Contestant {
  route: Route;
}

const NO_SEED = { apiKey: '', credentialIds: [] };

export function lanes(routes: Map<string, Route>, localPid: number): Lane[] {
  return [...routes].map(([name, route]) => ({ name, baseUrl: `http://${route.host}:${route.port}`, seeded: NO_SEED, pid: [...route.pids, localPid], route }));
}

/** CPU µs per request of each of the lane's processes during one run (rounds.ts charges their sum). */
interface SplitRun extends LoadResult {
  cpuSplit?: Record<string, number>;
}

export function splitCpu(names: Map<number, string>, run: (c: Lane, seconds: number) => Promise<LoadResult>) {
  return async (c: Lane, seconds: number): Promise<SplitRun> => {
    const pids = [c.pid ?? []].flat();
    const before = pids.map(cpuSecondsOf);
    const result = await run(c, seconds);
    const cpuSplit: Record<string, number> = {};
    pids.forEach((pid, i) => {
      const name = names.get(pid) ?? String(pid);
      cpuSplit[name] = (cpuSplit[name] ?? 0) + ((cpuSecondsOf(pid) - before[i]!) * 1e6) / result.requests;
    });
    return { ...result, cpuSplit };
  };
}

/** "burrow 900 · agent 1,400 · local 200": medians over rounds, scaled like the CPU column. */
function describeSplit(f: Figures, scale: number): string {
  const splits = f.rounds.map((r) => (r as SplitRun).cpuSplit ?? {});
  const names = Object.keys(splits[0] ?? {});
  if (names.length < 2) return '';
  return names.map((n) => `${n} ${(median(splits.map((s) => s[n] ?? NaN)) * scale).toFixed(scale === 1 ? 0 : 2)}`).join(' · ');
}

export function tcpTarget(route: Route): TcpTarget {
  return { host: route.host, port: route.port, ...(route.servername ? { tls: { servername: route.servername } } : {}) };
}

/** A target that needs a burrow route that is not there: reported, and missed. */
export function unmeasured(name: string, goal: string, why: string): Target {
  return { name, goal, measured: `not measured: ${why}`, met: false };
}

export function figuresTable(results: Record<string, Figures>, unit: string, cpuUnit: string, reference = 'direct', cpuScale = 1): string {
  const ref = results[reference];
  const rows: (string | number)[][] = [['path', unit, 'spread', 'p50 ms', 'p99 ms', `CPU ${cpuUnit}`, `× ${reference}`, 'failed', 'CPU by process']];
  for (const [name, f] of Object.entries(results)) {
    rows.push([
      name,
      unit === 'MB/s' ? f.reqPerSec.toFixed(1) : fmt.rate(f.reqPerSec),
      fmt.pct(f.reqPerSecSpread),
      fmt.ms(f.p50),
      fmt.ms(f.p99),
      Number.isFinite(f.cpuUsPerRequest) ? (f.cpuUsPerRequest * cpuScale).toFixed(cpuScale === 1 ? 0 : 2) : '—',
      ref ? fmt.ratio(pairedRatio(f, ref, (r) => r.reqPerSec)) : '—',
      failures(f),
      describeSplit(f, cpuScale),
    ]);
  }
  return table(rows);
}

function ratiosTo(results: Record<string, Figures>, reference: string): Record<string, number> {
  const ref = results[reference];
  if (!ref) return {};
  return Object.fromEntries(Object.entries(results).map(([name, f]) => [name, pairedRatio(f, ref, (r) => r.reqPerSec)]));
}

/** Paths that are not burrow: their failures are shown, but they are not burrow's to answer for. */
const BASELINES = new Set(['direct', 'TCP relay', 'TLS relay pair', 'localtunnel']);

export function failedTarget(scenario: string, results: Record<string, Figures>): Target {
  const bad = Object.entries(results).filter(([, f]) => failures(f) > 0);
  return {
    name: `${scenario}: errors, timeouts, non-2xx`,
    goal: '0 through burrow',
    measured: bad.length === 0 ? '0' : bad.map(([name, f]) => `${name} ${failures(f)}`).join(', '),
    met: bad.every(([name]) => BASELINES.has(name)),
  };
}

/** A judged target reads PASS or MISS; a check that is only reported, ok or note. */
export function verdictOf(t: Target): string {
  if (t.judged) return t.met ? 'PASS' : 'MISS';
  return t.met ? 'ok' : 'note';
}

export function targetLines(targets: Target[]): string {
  return targets.map((t) => `  ${verdictOf(t).padEnd(4)}  ${t.name}: ${t.measured} (${t.judged ? 'target' : 'reported only'} ${t.goal})`).join('\n');
}

/**
 * A judged target (issue 29): burrow's throughput against a baseline path that does the same work
 * minus burrow's (the TLS relay pair: one encrypted hop; the TCP relay: one bare hop). A ratio
 * measured while requests failed through burrow does not count as met.
 */
function versusBaseline(name: string, least: number, results: Record<string, Figures>, baseline: string, missing: string | undefined): Target {
  const goal = `≥ ${least}× the ${baseline}`;
  const burrow = results.burrow;
  const base = results[baseline];
  if (!burrow || !base) return { ...unmeasured(name, goal, !burrow ? (missing ?? 'no burrow route') : `the ${baseline} did not run`), judged: true };
  const ratio = pairedRatio(burrow, base, (r) => r.reqPerSec);
  const failed = failures(burrow);
  const measured = `${fmt.preciseRatio(ratio)}${failed > 0 ? ` (${failed} failed through burrow)` : ''}`;
  return { name, goal, measured, met: ratio >= least && failed === 0, judged: true };
}

export function outcome(name: string, describe: string, body: string, targets: Target[], ratios: Record<string, number>, json: Record<string, unknown>): ScenarioOutcome {
  return { name, describe, text: `${body}\n${targetLines(targets)}`, targets, ratios, json };
}

/** New TCP connections, each: connect, 1 KiB echo, close; 8 in parallel. */
export async function connectionsScenario(t: ScenarioTools, l: Lanes): Promise<ScenarioOutcome> {
  const contestants = lanes(l.tcp, l.localPids.tcp);
  const results = await alternateWith('conn', contestants, t.settings, t.log, splitCpu(l.processNames, (c, seconds) =>
    t.tcp.run({ kind: 'connections', target: tcpTarget(c.route), parallel: 8, seconds, payloadBytes: 1024 }),
  ), 'conn/s');
  const targets: Target[] = [versusBaseline('new TCP connections vs TCP relay', 0.6, results, 'TCP relay', l.missing.get('tcp'))];
  const burrow = results.burrow;
  const direct = results.direct!;
  if (burrow) {
    const added = burrow.p50 - direct.p50;
    targets.push({ name: 'new TCP connections: p50 added over direct', goal: '≤ 1 ms', measured: `${added.toFixed(2)} ms`, met: added <= 1 });
  }
  targets.push(failedTarget('connections', results));
  const body = figuresTable(results, 'conn/s', 'µs/conn');
  return outcome('connections', 'new TCP connections: connect, 1 KiB echo, close; 8 in parallel', body, targets, ratiosTo(results, 'direct'), { results });
}

/** autocannon GETs over each HTTP route; `close` sends Connection: close (a new connection per request). */
export async function httpScenario(t: ScenarioTools, l: Lanes, kind: 'http' | 'http64k' | 'http-close'): Promise<ScenarioOutcome> {
  const contestants = lanes(l.http, l.localPids.http);
  const path = kind === 'http64k' ? '/64k' : '/';
  const connections = 16;
  const results = await alternateWith(kind, contestants, t.settings, t.log, splitCpu(l.processNames, (c, seconds) =>
    kind === 'http-close'
      ? t.tcp.run({ kind: 'http-close', target: tcpTarget(c.route), parallel: connections, seconds, path, hostHeader: c.route.hostHeader ?? `${c.route.host}:${c.route.port}` })
      : t.load.run({ url: c.baseUrl, connections, seconds, spec: { method: 'GET', path, headers: c.route.hostHeader ? { host: c.route.hostHeader } : {} } }),
  ));
  const targets: Target[] = [];
  const burrow = results.burrow;
  const direct = results.direct!;
  const lt = results.localtunnel;
  const label = kind === 'http' ? 'keep-alive GET' : kind === 'http64k' ? 'keep-alive GET 64 KiB' : 'new HTTP connections';
  if (kind !== 'http-close') targets.push(versusBaseline(`${label} vs TLS relay pair`, 0.8, results, 'TLS relay pair', l.missing.get('http')));
  if (!burrow) {
    if (kind === 'http-close') targets.push(unmeasured(`${label} vs localtunnel`, '≥ 1×', l.missing.get('http') ?? 'no burrow route'));
  } else if (kind === 'http-close') {
    targets.push(versusLocaltunnel(`${label} vs localtunnel`, 1, burrow, lt));
  } else {
    targets.push(versusLocaltunnel(`${label} vs localtunnel`, 1.5, burrow, lt));
    const limit = 3 * direct.p99 + 2;
    targets.push({ name: `${label}: p99`, goal: `≤ 3× direct's + 2 ms (${limit.toFixed(2)} ms)`, measured: `${burrow.p99.toFixed(2)} ms`, met: burrow.p99 <= limit });
  }
  targets.push(failedTarget(kind, results));
  const describe =
    kind === 'http-close'
      ? `GET / with Connection: close, a new connection each, ${connections} in parallel (the bench's TCP load generator)`
      : `keep-alive GET ${path}, ${connections} connections (autocannon)`;
  return outcome(kind, describe, figuresTable(results, 'req/s', 'µs/req'), targets, ratiosTo(results, 'direct'), { results });
}

/**
 * One connection moving the bulk size down, then up. rounds.ts's "seconds" are used as the share
 * of the bulk size to move: 1 for a measured transfer, 1/8 for the warm-up.
 */
/** burrow against localtunnel; a localtunnel that carried nothing is said so, not shown as a ratio. */
function versusLocaltunnel(name: string, least: number, burrow: Figures, lt: Figures | undefined): Target {
  const goal = `≥ ${least}×`;
  if (!lt) return { name, goal, measured: 'localtunnel not measured', met: false };
  if (!(lt.reqPerSec > 0)) return { name, goal, measured: `localtunnel carried nothing in the measured rounds (${failures(lt)} failures seen)`, met: burrow.reqPerSec > 0 };
  const ratio = pairedRatio(burrow, lt, (r) => r.reqPerSec);
  return { name, goal, measured: fmt.preciseRatio(ratio), met: ratio >= least };
}

export async function bulkScenario(t: ScenarioTools, l: Lanes): Promise<ScenarioOutcome> {
  const bytes = Math.round(t.options.bulkMb * 1e6);
  const contestants = lanes(l.tcp, l.localPids.tcp);
  const settings = { ...t.settings, seconds: 1, warmupSeconds: t.settings.warmupSeconds > 0 ? 1 / 8 : 0 };
  const parts: string[] = [];
  const targets: Target[] = [];
  const ratios: Record<string, number> = {};
  const json: Record<string, unknown> = {};
  for (const direction of ['down', 'up'] as const) {
    const results = await alternateWith(`bulk ${direction}`, contestants, settings, t.log, splitCpu(l.processNames, (c, share) =>
      t.tcp.run({ kind: 'bulk', target: tcpTarget(c.route), direction, bytes: Math.round(bytes * share) }),
    ), 'MB/s');
    json[direction] = results;
    // CPU µs per transfer → CPU s per GB.
    parts.push(`${direction === 'down' ? 'down (local server → client)' : 'up (client → local server)'}:\n${figuresTable(results, 'MB/s', 's/GB', 'direct', 1e-6 / (bytes / 1e9))}`);
    for (const [name, ratio] of Object.entries(ratiosTo(results, 'direct'))) ratios[`${name} ${direction}`] = ratio;
    targets.push(versusBaseline(`bulk ${direction} vs TLS relay pair`, 0.8, results, 'TLS relay pair', l.missing.get('tcp')));
    targets.push(failedTarget(`bulk ${direction}`, results));
  }
  return outcome('bulk', `one connection moving ${t.options.bulkMb} MB down, then up`, parts.join('\n\n'), targets, ratios, json);
}

/** New TLS connections (handshake with the local TLS server, 1 KiB echo), 16 in parallel: edge vs tls endpoint. */
export async function tlsEdgeScenario(t: ScenarioTools, l: Lanes): Promise<ScenarioOutcome> {
  const describe = 'new TLS connections (handshake end to end, 1 KiB echo), 16 in parallel: TLS edge + tunnel group vs tls endpoint';
  const unavailable = l.missing.get('tls edge api');
  if (unavailable) {
    return { name: 'tls-edge', describe, text: `tls-edge: not available — ${unavailable}; skipped.`, targets: [], ratios: {}, json: { skipped: unavailable } };
  }
  const contestants = lanes(l.tls, l.localPids.tls);
  const results = await alternateWith('tls-edge', contestants, t.settings, t.log, splitCpu(l.processNames, (c, seconds) =>
    t.tcp.run({ kind: 'connections', target: tcpTarget(c.route), parallel: 16, seconds, payloadBytes: 1024 }),
  ), 'conn/s');
  const edge = results['tls edge'];
  const endpoint = results['tls endpoint'];
  const targets: Target[] = [];
  if (!edge || !endpoint) targets.push(unmeasured('TLS edge vs tls endpoint', '≥ 0.8×', l.missing.get(edge ? 'tls endpoint' : 'tls edge') ?? 'route missing'));
  else {
    const ratio = pairedRatio(edge, endpoint, (r) => r.reqPerSec);
    targets.push({ name: 'TLS edge vs tls endpoint', goal: '≥ 0.8×', measured: fmt.preciseRatio(ratio), met: ratio >= 0.8 });
  }
  targets.push(failedTarget('tls-edge', results));
  return outcome('tls-edge', describe, figuresTable(results, 'conn/s', 'µs/conn'), targets, ratiosTo(results, 'direct'), { results });
}

/** New TCP connections through burrow with and without the 25-rule policy (alternating). */
export async function policyScenario(t: ScenarioTools, l: Lanes, describePolicy: string): Promise<ScenarioOutcome> {
  const describe = `new TCP connections through burrow (1 KiB echo, 8 in parallel) with ${describePolicy} vs none`;
  const plain = l.tcp.get('burrow');
  const goal = 'loss ≤ 10 %';
  if (!plain || !l.tcpPolicy) {
    const why = !plain ? (l.missing.get('tcp') ?? 'no burrow route') : (l.missing.get('tcp-policy') ?? 'no policy endpoint');
    const targets = [unmeasured('policy: connections lost to a 25-rule policy', goal, why)];
    return outcome('policy', describe, `policy: not measured — ${why}`, targets, {}, {});
  }
  const contestants = lanes(new Map([['no policy', plain], ['25-rule policy', l.tcpPolicy]]), l.localPids.tcp);
  const results = await alternateWith('policy', contestants, t.settings, t.log, splitCpu(l.processNames, (c, seconds) =>
    t.tcp.run({ kind: 'connections', target: tcpTarget(c.route), parallel: 8, seconds, payloadBytes: 1024 }),
  ), 'conn/s');
  const ratio = pairedRatio(results['25-rule policy']!, results['no policy']!, (r) => r.reqPerSec);
  const loss = 1 - ratio;
  const targets: Target[] = [
    { name: 'policy: connections lost to a 25-rule policy', goal, measured: `${(loss * 100).toFixed(1)} %`, met: loss <= 0.1 },
    failedTarget('policy', results),
  ];
  return outcome('policy', describe, figuresTable(results, 'conn/s', 'µs/conn', 'no policy'), targets, {}, { results, loss });
}

/** Largest RSS (MB) of `pid` sampled every 100 ms while `work` runs; VmHWM is the process's lifetime peak, so it is not used. */
export async function peakRssDuring<T>(pid: number, work: Promise<T>): Promise<{ value: T; peakMb: number }> {
  let peakMb = memoryOf(pid)?.rssMb ?? NaN;
  const timer = setInterval(() => {
    peakMb = Math.max(peakMb, memoryOf(pid)?.rssMb ?? NaN);
  }, 100);
  try {
    const value = await work;
    peakMb = Math.max(peakMb, memoryOf(pid)?.rssMb ?? NaN);
    return { value, peakMb };
  } finally {
    clearInterval(timer);
  }
}

/** `streams` slow connections at once through burrow's one agent: stalls, and burrow's RSS per connection. */
export async function streamsScenario(t: ScenarioTools, l: Lanes, burrowPid: number): Promise<ScenarioOutcome> {
  const count = t.options.streams;
  const describe = `${count} concurrent slow connections through one agent (32 B echo every ~200 ms each, stall = an echo later than 2 s)`;
  const route = l.tcp.get('burrow');
  if (!route) {
    const why = l.missing.get('tcp') ?? 'no burrow route';
    return outcome('streams', describe, `streams: not measured — ${why}`, [unmeasured('streams: stalls', '0', why)], {}, {});
  }
  const beforeMb = memoryOf(burrowPid)?.rssMb ?? NaN;
  let openMb = NaN;
  const job = t.tcp.run({ kind: 'slow', target: tcpTarget(route), count, seconds: t.settings.seconds, intervalMs: 200, stallMs: 2000 }, (p) => {
    if (p === 'open') openMb = memoryOf(burrowPid)?.rssMb ?? NaN;
  });
  const { value: r, peakMb } = await peakRssDuring(burrowPid, job);
  t.log(`streams   ${r.opened}/${count} open, ${r.stalls} stalled, ${r.requests} echoes, p99 ${fmt.ms(r.p99)} ms, burrow RSS ${fmt.mb(beforeMb)} → ${fmt.mb(peakMb)} MB`);
  const perConnKiB = ((Math.max(peakMb, openMb) - beforeMb) * 1024) / count;
  const targets: Target[] = [
    { name: 'streams: all open, none stalled', goal: `${count} open, 0 stalled`, measured: `${r.opened} open, ${r.stalls} stalled, ${r.errors} errors`, met: r.opened === count && r.stalls === 0 && r.errors === 0 },
    { name: 'streams: burrow RSS growth per connection', goal: '≤ 256 KiB', measured: `${perConnKiB.toFixed(1)} KiB`, met: perConnKiB <= 256 },
  ];
  const body = table([
    ['connections', 'echoes', 'p50 ms', 'p99 ms', 'max ms', 'RSS before MB', 'RSS all open MB', 'RSS peak MB'],
    [count, r.requests, fmt.ms(r.p50), fmt.ms(r.p99), fmt.ms(r.max), fmt.mb(beforeMb), fmt.mb(openMb), fmt.mb(peakMb)],
  ]);
  return outcome('streams', describe, body, targets, {}, { result: r, beforeMb, openMb, peakMb, perConnKiB });
}

