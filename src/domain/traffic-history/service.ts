import { DENIAL_PREFIX, MINUTES_SHOWN, SERIES, type TrafficHistoryRepository } from './types.js';

export interface LastHour {
  /** The start of each minute (Unix seconds), oldest first; the last is the current, partial minute. */
  times: number[];
  connections: number[];
  requests: number[];
  bytesIn: number[];
  bytesOut: number[];
  denials: Record<string, number[]>;
  /** Instances whose counts are in the sums. */
  instances: number;
}

/**
 * The last hour of traffic, summed over every instance on the database. The counts are the
 * server's (as /metrics has them), not one account's: see docs/DECISIONS.md.
 */
export class TrafficHistoryService {
  constructor(private readonly repository: TrafficHistoryRepository) {}

  async lastHour(now: number): Promise<LastHour> {
    const current = Math.floor(now / 60_000) * 60;
    const first = current - (MINUTES_SHOWN - 1) * 60;
    const [rows, instances] = await Promise.all([this.repository.sums(first), this.repository.instances(first)]);
    const times = Array.from({ length: MINUTES_SHOWN }, (_, i) => first + i * 60);
    const zeros = () => new Array<number>(MINUTES_SHOWN).fill(0);
    const series: Record<string, number[]> = {};
    for (const row of rows) {
      const index = (row.minute - first) / 60;
      if (!Number.isInteger(index) || index < 0 || index >= MINUTES_SHOWN) continue;
      (series[row.series] ??= zeros())[index] = row.value;
    }
    const denials: Record<string, number[]> = {};
    for (const [name, values] of Object.entries(series)) if (name.startsWith(DENIAL_PREFIX)) denials[name.slice(DENIAL_PREFIX.length)] = values;
    return {
      times,
      connections: series[SERIES.connections] ?? zeros(),
      requests: series[SERIES.requests] ?? zeros(),
      bytesIn: series[SERIES.bytesIn] ?? zeros(),
      bytesOut: series[SERIES.bytesOut] ?? zeros(),
      denials,
      instances,
    };
  }
}
