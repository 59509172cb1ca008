/**
 * Per-account request limit over a rolling window (SPEC §8), counted in one-second buckets:
 * the window holds the buckets of the last `windowSeconds` seconds. Deciding is synchronous and
 * in memory, so the limiter costs no I/O on the request path. With a `SharedCounts` store the
 * counts of every instance are combined (see storage/rate-limit-counts.ts): local increments are
 * pushed and everyone's totals pulled every `syncIntervalMs`, so the limit holds across
 * instances to within what other instances accepted during one sync interval.
 */
/** What the request gate asks of a rate limiter (app/rate-limit.ts builds one from the config). */
export interface RateLimiter {
  /** Counts one request of the account; returns seconds to wait when over the limit, else 0. */
  consume(accountId: string): number;
  close?(): Promise<void>;
}

export interface SharedCounts {
  /** Adds this instance's increments, then returns every instance's counts per bucket for the accounts. */
  sync(increments: Map<string, Map<number, number>>, accounts: string[], sinceSecond: number): Promise<Map<string, Map<number, number>>>;
  /** Forgets buckets older than the given second. */
  prune(beforeSecond: number): Promise<void>;
}

export interface RateLimitOptions {
  limitPerWindow: number;
  windowSeconds?: number;
  nowMs?: () => number;
  shared?: SharedCounts;
  syncIntervalMs?: number;
  onSyncError?: (error: unknown) => void;
}

type Buckets = Map<number, number>;

export class SlidingWindowRateLimiter {
  private readonly window: number;
  private readonly now: () => number;
  /** Counts known to be stored by all instances (shared mode), or all counts (local mode). */
  private readonly settled = new Map<string, Buckets>();
  /** This instance's increments not yet pushed; and those being pushed right now. */
  private pending = new Map<string, Buckets>();
  private pushing = new Map<string, Buckets>();
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private nextSync: Promise<void> | undefined;
  private lastPrune = 0;

  constructor(private readonly options: RateLimitOptions) {
    this.window = options.windowSeconds ?? 60;
    this.now = options.nowMs ?? Date.now;
    if (options.shared) {
      this.timer = setInterval(() => void this.sync(), options.syncIntervalMs ?? 500);
      this.timer.unref();
    }
  }

  /** Counts one request; returns 0 when allowed, else the seconds to wait (the request is not counted). */
  consume(accountId: string): number {
    const second = Math.floor(this.now() / 1000);
    const oldest = second - this.window + 1;
    // An account this instance has not seen: fetch what the others counted as soon as possible.
    if (this.options.shared && !this.settled.has(accountId)) void this.sync();
    let total = 0;
    for (const source of [this.settled, this.pending, this.pushing]) {
      const buckets = source.get(accountId);
      if (!buckets) continue;
      for (const [bucket, count] of buckets) {
        if (bucket < oldest) buckets.delete(bucket);
        else total += count;
      }
    }
    if (total >= this.options.limitPerWindow) return this.retryAfter(accountId, oldest, total, second);
    increment(this.options.shared ? this.pending : this.settled, accountId, second);
    return 0;
  }

  /** Pushes local increments and pulls every instance's totals now (tests and shutdown use it). */
  sync(): Promise<void> {
    const shared = this.options.shared;
    if (!shared) return Promise.resolve();
    // One sync at a time; a call during one gets the next, which includes what came since.
    if (this.nextSync) return this.nextSync;
    if (this.syncing) {
      return (this.nextSync = this.syncing.then(() => {
        this.nextSync = undefined;
        return this.sync();
      }));
    }
    return (this.syncing = this.runSync(shared).finally(() => (this.syncing = undefined)));
  }

  close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    return this.sync();
  }

  private async runSync(shared: SharedCounts): Promise<void> {
    const second = Math.floor(this.now() / 1000);
    const since = second - this.window + 1;
    this.pushing = this.pending;
    this.pending = new Map();
    const accounts = [...new Set([...this.settled.keys(), ...this.pushing.keys()])];
    try {
      const totals = await shared.sync(this.pushing, accounts, since);
      this.settled.clear();
      for (const account of accounts) this.settled.set(account, totals.get(account) ?? new Map());
      this.pushing = new Map();
      if (second - this.lastPrune >= 30) {
        this.lastPrune = second;
        await shared.prune(since - this.window);
      }
    } catch (error) {
      // Keep counting locally; the increments are pushed with the next sync.
      for (const [account, buckets] of this.pushing) for (const [s, n] of buckets) increment(this.pending, account, s, n);
      this.pushing = new Map();
      this.options.onSyncError?.(error);
    }
    this.forgetIdle(since);
  }

  /** Whole seconds until enough of the oldest buckets leave the window to fall under the limit. */
  private retryAfter(accountId: string, oldest: number, total: number, second: number): number {
    const merged = new Map<number, number>();
    for (const source of [this.settled, this.pending, this.pushing]) {
      for (const [bucket, count] of source.get(accountId) ?? []) {
        if (bucket >= oldest) merged.set(bucket, (merged.get(bucket) ?? 0) + count);
      }
    }
    let remaining = total;
    for (const bucket of [...merged.keys()].sort((a, b) => a - b)) {
      remaining -= merged.get(bucket)!;
      if (remaining < this.options.limitPerWindow) return Math.max(1, bucket + this.window - second);
    }
    return 1;
  }

  private forgetIdle(oldest: number): void {
    for (const [account, buckets] of this.settled) {
      for (const second of buckets.keys()) if (second < oldest) buckets.delete(second);
      if (buckets.size === 0) this.settled.delete(account);
    }
  }
}

function increment(target: Map<string, Buckets>, accountId: string, second: number, by = 1): void {
  let buckets = target.get(accountId);
  if (!buckets) target.set(accountId, (buckets = new Map()));
  buckets.set(second, (buckets.get(second) ?? 0) + by);
}
