/**
 * circuit-breaker's state (HTTP-POLICY.md §2, the reference's action of that name): per endpoint
 * and action, the answers of a rolling window in buckets; when at least `volume` answers came
 * and the share of 5xx reaches `threshold`, the breaker trips and requests are answered 503 for
 * `trippedMs`, after which it closes with an empty window. Pure: the time comes in with each call.
 * One instance per endpoint and process (at most `maxBreakers`, least recently used dropped).
 */
export interface BreakerConfig {
  readonly key: string;
  readonly threshold: number;
  readonly volume: number;
  readonly windowMs: number;
  readonly trippedMs: number;
  readonly buckets: number;
}

interface Breaker {
  /** When the breaker is open until (0: closed). */
  openUntil: number;
  /** Per bucket: its start, answers and failures. */
  starts: number[];
  total: number[];
  failed: number[];
}

export class CircuitBreakers {
  private readonly breakers = new Map<string, Breaker>();

  constructor(private readonly maxBreakers = 10_000) {}

  /** Whether a request may pass now (false while tripped). */
  allows(config: BreakerConfig, nowMs: number): boolean {
    const breaker = this.breakers.get(config.key);
    if (!breaker || breaker.openUntil === 0) return true;
    if (nowMs < breaker.openUntil) return false;
    this.breakers.delete(config.key);
    return true;
  }

  /** One answer to a request that passed: a failure is a 5xx. */
  record(config: BreakerConfig, failed: boolean, nowMs: number): void {
    let breaker = this.breakers.get(config.key);
    if (breaker) this.breakers.delete(config.key);
    else breaker = { openUntil: 0, starts: new Array(config.buckets).fill(-Infinity), total: new Array(config.buckets).fill(0), failed: new Array(config.buckets).fill(0) };
    this.breakers.set(config.key, breaker);
    if (this.breakers.size > this.maxBreakers) this.breakers.delete(this.breakers.keys().next().value!);
    if (breaker.openUntil !== 0) return;
    const width = config.windowMs / config.buckets;
    const slot = Math.floor(nowMs / width);
    const index = slot % config.buckets;
    if (breaker.starts[index] !== slot) {
      breaker.starts[index] = slot;
      breaker.total[index] = 0;
      breaker.failed[index] = 0;
    }
    breaker.total[index]!++;
    if (failed) breaker.failed[index]!++;
    let total = 0;
    let failures = 0;
    for (let i = 0; i < config.buckets; i++) {
      if (slot - breaker.starts[i]! >= config.buckets) continue;
      total += breaker.total[i]!;
      failures += breaker.failed[i]!;
    }
    if (total >= config.volume && failures / total >= config.threshold) breaker.openUntil = nowMs + config.trippedMs;
  }
}
