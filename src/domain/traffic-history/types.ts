/**
 * The console's charts of the last hour (CONSOLE.md §1–2): each instance adds its counters' growth
 * per minute to a shared table; the API sums every instance's rows.
 */

/** One instance's counters since it started (observability/metrics.ts `trafficTotals`). */
export interface TrafficTotals {
  connections: number;
  requests: number;
  bytesIn: number;
  bytesOut: number;
  /** Denials by the action that made them (deny, restrict-ips, ip-restriction, …). */
  denials: ReadonlyMap<string, number>;
}

/** One minute's growth of one series, from one instance or summed over all. */
export interface MinuteCount {
  /** Unix seconds at the start of the minute. */
  minute: number;
  series: string;
  value: number;
}

export interface TrafficHistoryRepository {
  /** Adds to this instance's counts of those minutes (rows it already has grow). */
  add(instanceId: string, counts: readonly MinuteCount[]): Promise<void>;
  /** Every instance's counts from `sinceMinute` on, summed per minute and series. */
  sums(sinceMinute: number): Promise<MinuteCount[]>;
  /** How many instances wrote counts from `sinceMinute` on. */
  instances(sinceMinute: number): Promise<number>;
  /** Forgets minutes before `beforeMinute`. */
  prune(beforeMinute: number): Promise<void>;
}

export const SERIES = { connections: 'connections', requests: 'requests', bytesIn: 'bytes_in', bytesOut: 'bytes_out' } as const;
/** A denial series is this prefix and the action's name. */
export const DENIAL_PREFIX = 'denied:';
/** Actions kept apart in the denial series; a counter with more (it cannot today) folds the rest into `other`. */
export const MAX_DENIAL_ACTIONS = 16;
export const MINUTES_SHOWN = 60;
/** Kept a little beyond the hour shown, then pruned. */
export const MINUTES_KEPT = 120;
