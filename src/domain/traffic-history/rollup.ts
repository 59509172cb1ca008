import { DENIAL_PREFIX, MAX_DENIAL_ACTIONS, MINUTES_KEPT, SERIES, type MinuteCount, type TrafficHistoryRepository, type TrafficTotals } from './types.js';

/** How often an instance writes its counters' growth: the charts lag at most this much. */
export const ROLLUP_EVERY_MS = 10_000;

/**
 * Writes one instance's per-minute growth of its traffic counters, off the request path: a timer
 * reads the totals, writes what grew since the last write (a few rows, whatever the traffic), and
 * prunes old minutes. A failed write is kept and added to the next one, so nothing is lost or
 * counted twice; what waits is one number per series, so it stays bounded.
 */
export class TrafficRollup {
  private written: TrafficTotals | undefined;
  /** Growth not yet written (a write failed), by series, in the minute it was seen. */
  private pending = new Map<string, MinuteCount>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private prunedMinute = 0;

  constructor(
    private readonly repository: TrafficHistoryRepository,
    private readonly instanceId: string,
    private readonly totals: () => TrafficTotals,
    private readonly onError: (error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  start(everyMs = ROLLUP_EVERY_MS): void {
    this.written = this.totals();
    this.timer = setInterval(() => void this.flush(), everyMs);
    this.timer.unref();
  }

  /** Writes what grew since the last write; one write at a time. */
  flush(): Promise<void> {
    this.running ??= this.write().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops the timer and writes the last growth (at shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.flush();
  }

  private async write(): Promise<void> {
    const current = this.totals();
    const minute = Math.floor(this.now() / 60_000) * 60;
    this.collect(minute, grown(this.written, current));
    this.written = current;
    if (this.pending.size === 0 && this.prunedMinute === minute) return;
    try {
      const counts = [...this.pending.values()];
      if (counts.length > 0) await this.repository.add(this.instanceId, counts);
      this.pending.clear();
      if (this.prunedMinute !== minute) {
        await this.repository.prune(minute - MINUTES_KEPT * 60);
        this.prunedMinute = minute;
      }
    } catch (error) {
      this.onError(error);
    }
  }

  private collect(minute: number, growth: Map<string, number>): void {
    for (const [series, value] of growth) {
      if (value <= 0) continue;
      // Growth left from a failed write of an earlier minute is written in the current one: the number stays bounded.
      const waiting = this.pending.get(series);
      this.pending.set(series, { minute, series, value: value + (waiting?.value ?? 0) });
    }
  }
}

function grown(before: TrafficTotals | undefined, after: TrafficTotals): Map<string, number> {
  const growth = new Map<string, number>([
    [SERIES.connections, after.connections - (before?.connections ?? 0)],
    [SERIES.requests, after.requests - (before?.requests ?? 0)],
    [SERIES.bytesIn, after.bytesIn - (before?.bytesIn ?? 0)],
    [SERIES.bytesOut, after.bytesOut - (before?.bytesOut ?? 0)],
  ]);
  let actions = 0;
  for (const [action, count] of after.denials) {
    const series = ++actions <= MAX_DENIAL_ACTIONS ? `${DENIAL_PREFIX}${action}` : `${DENIAL_PREFIX}other`;
    growth.set(series, (growth.get(series) ?? 0) + count - (before?.denials.get(action) ?? 0));
  }
  return growth;
}
