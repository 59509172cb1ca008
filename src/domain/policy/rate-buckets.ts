/**
 * rate-limit's counts (HTTP-POLICY.md §2): a sliding window per bucket, estimated from the
 * current and the previous fixed window as the reference's `sliding_window` describes. Pure: the
 * time comes in with each call. Bounded: at most `maxBuckets` keys; the least recently used go.
 * One instance per endpoint and process (a cluster's instances count separately: docs/DECISIONS.md).
 */
export interface RateVerdict {
  limited: boolean;
  /** Whole seconds until a request would be let through again (0 when not limited). */
  retryAfterSeconds: number;
}

interface Window {
  start: number;
  current: number;
  previous: number;
}

export class RateBuckets {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly maxBuckets = 100_000) {}

  take(key: string, capacity: number, windowMs: number, nowMs: number): RateVerdict {
    let window = this.windows.get(key);
    if (window) this.windows.delete(key);
    else window = { start: nowMs - (nowMs % windowMs), current: 0, previous: 0 };
    this.windows.set(key, window); // most recently used last
    const elapsed = nowMs - window.start;
    if (elapsed >= 2 * windowMs) {
      window.start = nowMs - (nowMs % windowMs);
      window.previous = 0;
      window.current = 0;
    } else if (elapsed >= windowMs) {
      window.start += windowMs;
      window.previous = window.current;
      window.current = 0;
    }
    const into = (nowMs - window.start) / windowMs;
    const estimate = window.previous * (1 - into) + window.current;
    if (this.windows.size > this.maxBuckets) this.windows.delete(this.windows.keys().next().value!);
    if (estimate + 1 > capacity) {
      // When the previous window's share has decayed enough for one more request (or the window turns).
      const free = window.previous > 0 ? (estimate + 1 - capacity) / window.previous : 1 - into;
      return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil((Math.min(free, 1 - into + 1) * windowMs) / 1000)) };
    }
    window.current++;
    return { limited: false, retryAfterSeconds: 0 };
  }
}
