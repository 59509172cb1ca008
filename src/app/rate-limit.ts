import type { Config } from '../config.js';
import { SlidingWindowRateLimiter, type RateLimiter } from '../domain/rate-limit.js';
import type { Logger } from '../observability/logger.js';
import type { Store } from '../storage/db.js';
import { SqlRateLimitCounts } from '../storage/repositories/rate-limit-counts.js';

/**
 * RATE_LIMIT_PER_MINUTE per account over a rolling minute; 0 turns it off. On PostgreSQL the
 * counts are shared through the database so the limit holds across instances; on SQLite (one
 * instance) they live in memory.
 */
export function createRateLimiter(config: Config, store: Store, log: Logger): RateLimiter {
  if (config.rateLimitPerMinute === 0) return { consume: () => 0 };
  const limiter = new SlidingWindowRateLimiter({
    limitPerWindow: config.rateLimitPerMinute,
    windowSeconds: 60,
    ...(store.dialect === 'postgres'
      ? {
          shared: new SqlRateLimitCounts(store),
          syncIntervalMs: 250,
          onSyncError: (error: unknown) => log.warn({ err: error }, 'rate limit counts could not be shared; counting locally'),
        }
      : {}),
  });
  return { consume: (accountId) => limiter.consume(accountId), close: () => limiter.close() };
}
