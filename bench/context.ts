import type { BenchOptions } from './args.js';
import type { BurrowCommand } from './processes.js';
import type { MachineInfo } from './report.js';
import type { RoundSettings } from './rounds.js';

/** What every mode gets from bench/run.ts. */
export interface RunContext {
  options: BenchOptions;
  command: BurrowCommand;
  /** A fresh temporary directory for databases and profiles. */
  dir: string;
  machine: MachineInfo;
  /** Progress, to stderr. */
  log(line: string): void;
  /** Results, to stdout. */
  out(text: string): void;
}

/** A mode's verdict: `ok` is false when any answer was not 2xx (REST targets never fail the run; tunnel targets do). */
export interface ModeResult {
  ok: boolean;
  /** Why the run failed, when not because of non-2xx answers. */
  failure?: string;
  json: Record<string, unknown>;
}

/** How client and server share the CPUs, for the printed header. */
export function describePlacement(options: BenchOptions): string {
  return options.pin ? 'servers pinned to CPU 0, autocannon to the other CPUs' : 'no CPU pinning';
}

export function roundSettings(options: BenchOptions): RoundSettings {
  return {
    seconds: options.duration,
    rounds: options.rounds,
    warmupSeconds: options.warmup,
    connections: options.connections,
  };
}

export function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
