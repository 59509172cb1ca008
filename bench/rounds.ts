import type { LoadGenerator, LoadResult } from './load.js';
import { cpuSecondsOf } from './procfs.js';
import type { Scenario, Seeded } from './scenarios.js';
import { median, spread } from './stats.js';

/** One server in an A B A B comparison. */
export interface Contestant {
  name: string;
  baseUrl: string;
  seeded: Seeded;
  /** Its process, to charge it the CPU time each run cost. */
  pid?: number;
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
export async function alternate(
  load: LoadGenerator,
  scenario: Scenario,
  contestants: Contestant[],
  settings: RoundSettings,
  progress: Progress,
): Promise<Record<string, Figures>> {
  const runs = new Map<string, { rounds: Run[]; warmup: Run[] }>();
  for (const c of contestants) runs.set(c.name, { rounds: [], warmup: [] });
  const run = async (c: Contestant, seconds: number): Promise<Run> => {
    const cpuBefore = c.pid === undefined ? NaN : cpuSecondsOf(c.pid);
    const result = await load.run({ url: c.baseUrl, connections: settings.connections, seconds, spec: scenario.spec(c.seeded) });
    const cpuAfter = c.pid === undefined ? NaN : cpuSecondsOf(c.pid);
    return { ...result, cpuUsPerRequest: ((cpuAfter - cpuBefore) * 1e6) / result.requests };
  };

  if (settings.warmupSeconds > 0) {
    for (const c of contestants) {
      const result = await run(c, settings.warmupSeconds);
      runs.get(c.name)!.warmup.push(result);
      progress(`${scenario.name.padEnd(9)} warm-up   ${c.name.padEnd(9)} ${describeRun(result)}`);
    }
  }
  for (let round = 1; round <= settings.rounds; round++) {
    for (const c of contestants) {
      const result = await run(c, settings.seconds);
      runs.get(c.name)!.rounds.push(result);
      progress(`${scenario.name.padEnd(9)} round ${round}/${settings.rounds} ${c.name.padEnd(9)} ${describeRun(result)}`);
    }
  }

  const figures: Record<string, Figures> = {};
  for (const [name, { rounds, warmup }] of runs) {
    const all = [...warmup, ...rounds];
    const firstFailure = all.find((r) => r.firstFailure)?.firstFailure;
    figures[name] = {
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

function describeRun(r: Run): string {
  const bad = r.non2xx + r.errors + r.timeouts;
  const cpu = Number.isFinite(r.cpuUsPerRequest) ? `  cpu ${r.cpuUsPerRequest.toFixed(0).padStart(4)} µs/req` : '';
  return (
    `${Math.round(r.reqPerSec).toLocaleString('en-US').padStart(7)} req/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  ` +
    `p99 ${r.p99.toFixed(2).padStart(7)} ms${cpu}${bad > 0 ? `  !! ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts` : ''}`
  );
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
