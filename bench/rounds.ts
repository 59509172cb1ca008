import type { LoadGenerator, LoadResult } from './load.js';
import { cpuSecondsOf } from './procfs.js';
import type { Scenario, Seeded } from './scenarios.js';
import { median, spread } from './stats.js';

/** One server in an A B A B comparison. */
export interface Contestant {
  name: string;
  baseUrl: string;
  seeded: Seeded;
  /** Its process (or processes: a relay pair, burrow and its agent), charged the CPU time each run cost. */
  pid?: number | number[];
}

/** A run and the server CPU time it cost. */
export interface Run extends LoadResult {
  /** Server CPU time (all threads, user + system) per answered request, in µs. */
  cpuUsPerRequest: number;
}

export interface RoundSettings {
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  connections: number;
}

/** A contestant's figures in one scenario: medians over the measured rounds. */
export interface Figures {
  reqPerSec: number;
  /** Half the max-min range of req/s over rounds, relative to the median. */
  reqPerSecSpread: number;
  p50: number;
  p99: number;
  /** Median over rounds of the server's CPU µs per request: unlike req/s, barely moved by other load on the machine. */
  cpuUsPerRequest: number;
  /** Non-2xx answers, connection errors and timeouts, warm-up included. */
  non2xx: number;
  errors: number;
  timeouts: number;
  firstFailure?: LoadResult['firstFailure'];
  rounds: Run[];
  warmup: Run[];
}

export type Progress = (line: string) => void;

/**
 * Warms every contestant up, then measures them in turn, A B A B …, `rounds` times each, so that
 * whatever else the machine is doing affects all of them alike.
 */
export function alternate(
  load: LoadGenerator,
  scenario: Scenario,
  contestants: Contestant[],
  settings: RoundSettings,
  progress: Progress,
): Promise<Record<string, Figures>> {
  return alternateWith(scenario.name, contestants, settings, progress, (c, seconds) =>
    load.run({ url: c.baseUrl, connections: settings.connections, seconds, spec: scenario.spec(c.seeded) }),
  );
}

/** `alternate` with any load: `runLoad` measures one contestant for `seconds` (the tunnel benchmarks' TCP loads). */
export async function alternateWith<C extends Contestant>(
  name: string,
  contestants: C[],
  settings: RoundSettings,
  progress: Progress,
  runLoad: (c: C, seconds: number) => Promise<LoadResult>,
  /** What `reqPerSec` counts, in the progress lines. */
  unit = 'req/s',
): Promise<Record<string, Figures>> {
  const runs = new Map<string, { rounds: Run[]; warmup: Run[] }>();
  for (const c of contestants) runs.set(c.name, { rounds: [], warmup: [] });
  const cpuOf = (c: Contestant) => (c.pid === undefined ? NaN : [c.pid].flat().reduce((sum, pid) => sum + cpuSecondsOf(pid), 0));
  const run = async (c: C, seconds: number): Promise<Run> => {
    const cpuBefore = cpuOf(c);
    const result = await runLoad(c, seconds);
    const cpuAfter = cpuOf(c);
    return { ...result, cpuUsPerRequest: ((cpuAfter - cpuBefore) * 1e6) / result.requests };
  };

  if (settings.warmupSeconds > 0) {
    for (const c of contestants) {
      const result = await run(c, settings.warmupSeconds);
      runs.get(c.name)!.warmup.push(result);
      progress(`${name.padEnd(9)} warm-up   ${c.name.padEnd(9)} ${describeRun(result, unit)}`);
    }
  }
  for (let round = 1; round <= settings.rounds; round++) {
    for (const c of contestants) {
      const result = await run(c, settings.seconds);
      runs.get(c.name)!.rounds.push(result);
      progress(`${name.padEnd(9)} round ${round}/${settings.rounds} ${c.name.padEnd(9)} ${describeRun(result, unit)}`);
    }
  }

  const figures: Record<string, Figures> = {};
  for (const [contestant, { rounds, warmup }] of runs) {
    const all = [...warmup, ...rounds];
    const firstFailure = all.find((r) => r.firstFailure)?.firstFailure;
    figures[contestant] = {
      reqPerSec: median(rounds.map((r) => r.reqPerSec)),
      reqPerSecSpread: spread(rounds.map((r) => r.reqPerSec)),
      p50: median(rounds.map((r) => r.p50)),
      p99: median(rounds.map((r) => r.p99)),
      cpuUsPerRequest: median(rounds.map((r) => r.cpuUsPerRequest)),
      non2xx: sum(all.map((r) => r.non2xx)),
      errors: sum(all.map((r) => r.errors)),
      timeouts: sum(all.map((r) => r.timeouts)),
      ...(firstFailure ? { firstFailure } : {}),
      rounds,
      warmup,
    };
  }
  return figures;
}

function describeRun(r: Run, unit: string): string {
  const bad = r.non2xx + r.errors + r.timeouts;
  const cpu = Number.isFinite(r.cpuUsPerRequest) ? `  cpu ${r.cpuUsPerRequest.toFixed(0).padStart(4)} µs/${unit.split('/')[0]}` : '';
  return (
    `${Math.round(r.reqPerSec).toLocaleString('en-US').padStart(7)} ${unit}  p50 ${ms(r.p50).padStart(6)} ms  ` +
    `p99 ${ms(r.p99).padStart(7)} ms${cpu}${bad > 0 ? `  !! ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts` : ''}`
  );
}

/** A latency, or "—" when the run answered nothing to measure (every request failed). */
function ms(value: number | null | undefined): string {
  return typeof value === 'number' && Number.isFinite(value) ? value.toFixed(2) : '—';
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** Total of failed answers over every figure set. */
export function failures(figures: Figures): number {
  return figures.non2xx + figures.errors + figures.timeouts;
}

/**
 * Median over rounds of a/b for one figure, pairing round i of one contestant with round i of
 * the other: they ran back to back, so what the machine was doing then weighs on both alike.
 */
export function pairedRatio(a: Figures, b: Figures, pick: (r: Run) => number): number {
  const n = Math.min(a.rounds.length, b.rounds.length);
  return median(Array.from({ length: n }, (_, i) => pick(a.rounds[i]!) / pick(b.rounds[i]!)));
}
