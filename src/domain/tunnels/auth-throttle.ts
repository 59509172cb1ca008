/**
 * Failed Auths per client address, as a token bucket: each failure takes a token, tokens
 * refill at a steady rate up to the burst, and an address with no token left is refused before
 * its authtoken is even looked at (so guessing learns nothing while throttled). Memory stays
 * bounded: a bucket that refilled is forgotten, and at most `maxAddresses` are tracked (the
 * address that failed least recently goes first).
 */
export interface AuthThrottleOptions {
  /** Failures an address may have in a row before it is refused. */
  readonly burst: number;
  /** Failures forgiven per second. */
  readonly refillPerSecond: number;
  readonly maxAddresses?: number;
  readonly nowMs?: () => number;
}

export const AUTH_THROTTLE: AuthThrottleOptions = { burst: 10, refillPerSecond: 1 };

interface Bucket {
  tokens: number;
  at: number;
}

export class AuthThrottle {
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;
  private readonly maxAddresses: number;

  constructor(private readonly options: AuthThrottleOptions = AUTH_THROTTLE) {
    this.now = options.nowMs ?? Date.now;
    this.maxAddresses = options.maxAddresses ?? 10_000;
  }

  /** Seconds until `address` may try again; 0 when it may now. */
  waitSeconds(address: string): number {
    const bucket = this.refilled(address);
    if (!bucket || bucket.tokens >= 1) return 0;
    return Math.ceil((1 - bucket.tokens) / this.options.refillPerSecond);
  }

  /** Counts one failed Auth; true when it took the last token (the address is refused from now). */
  failed(address: string): boolean {
    const bucket = this.refilled(address) ?? { tokens: this.options.burst, at: this.now() };
    const hadToken = bucket.tokens >= 1;
    bucket.tokens = Math.max(0, bucket.tokens - 1);
    this.buckets.delete(address); // re-inserted last: the Map's order is the eviction order
    this.buckets.set(address, bucket);
    for (const oldest of this.buckets.keys()) {
      if (this.buckets.size <= this.maxAddresses) break;
      this.buckets.delete(oldest);
    }
    return hadToken && bucket.tokens < 1;
  }

  private refilled(address: string): Bucket | undefined {
    const bucket = this.buckets.get(address);
    if (!bucket) return undefined;
    const now = this.now();
    bucket.tokens = Math.min(this.options.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.options.refillPerSecond);
    bucket.at = now;
    if (bucket.tokens < this.options.burst) return bucket;
    this.buckets.delete(address);
    return undefined;
  }
}
