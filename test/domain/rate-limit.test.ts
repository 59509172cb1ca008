import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SlidingWindowRateLimiter, type SharedCounts } from '../../src/domain/rate-limit.js';

function clock(start = 1_800_000_000_000) {
  const state = { now: start };
  return { state, nowMs: () => state.now };
}

describe('SlidingWindowRateLimiter', () => {
  it('allows the limit within the window, then answers how long to wait, without counting refusals', () => {
    const { state, nowMs } = clock();
    const limiter = new SlidingWindowRateLimiter({ limitPerWindow: 3, windowSeconds: 60, nowMs });
    assert.deepEqual([limiter.consume('a'), limiter.consume('a'), limiter.consume('a')], [0, 0, 0]);
    assert.equal(limiter.consume('a'), 60);
    state.now += 10_000;
    assert.equal(limiter.consume('a'), 50, 'refused requests do not push the wait further');
    state.now += 50_000;
    assert.equal(limiter.consume('a'), 0, 'a rolling window: the first second has left it');
  });

  it('rolls: the wait is until the oldest requests leave the window', () => {
    const { state, nowMs } = clock();
    const limiter = new SlidingWindowRateLimiter({ limitPerWindow: 4, windowSeconds: 60, nowMs });
    limiter.consume('a');
    state.now += 20_000;
    limiter.consume('a');
    limiter.consume('a');
    state.now += 20_000;
    limiter.consume('a');
    assert.equal(limiter.consume('a'), 20, 'one request leaves the window 20 s from now');
    state.now += 20_000;
    assert.equal(limiter.consume('a'), 0);
    assert.equal(limiter.consume('a'), 20, 'now the two at +20 s must leave');
  });

  it('counts accounts separately', () => {
    const { nowMs } = clock();
    const limiter = new SlidingWindowRateLimiter({ limitPerWindow: 1, nowMs });
    assert.equal(limiter.consume('a'), 0);
    assert.ok(limiter.consume('a') > 0);
    assert.equal(limiter.consume('b'), 0);
  });

  it('shares one limit between instances through the shared counts', async () => {
    const table = new Map<string, Map<number, number>>();
    const shared: SharedCounts = {
      async sync(increments, accounts, since) {
        for (const [account, buckets] of increments) {
          const stored = table.get(account) ?? new Map<number, number>();
          for (const [second, count] of buckets) stored.set(second, (stored.get(second) ?? 0) + count);
          table.set(account, stored);
        }
        const totals = new Map<string, Map<number, number>>();
        for (const account of accounts) {
          totals.set(account, new Map([...(table.get(account) ?? [])].filter(([second]) => second >= since)));
        }
        return totals;
      },
      async prune() {},
    };
    const { nowMs } = clock();
    const one = new SlidingWindowRateLimiter({ limitPerWindow: 10, nowMs, shared, syncIntervalMs: 60_000 });
    const two = new SlidingWindowRateLimiter({ limitPerWindow: 10, nowMs, shared, syncIntervalMs: 60_000 });
    for (let i = 0; i < 6; i++) assert.equal(one.consume('a'), 0);
    await one.sync();
    assert.equal(two.consume('a'), 0, 'first sight of the account on this instance starts a sync');
    await two.sync();
    for (let i = 0; i < 3; i++) assert.equal(two.consume('a'), 0);
    assert.ok(two.consume('a') > 0, 'the other instance used six of the ten');
    await two.sync();
    await one.sync();
    assert.ok(one.consume('a') > 0, 'and the first sees the second');
    await Promise.all([one.close(), two.close()]);
  });

  it('keeps counting locally when sharing fails, and pushes later', async () => {
    let fail = true;
    let pushed = 0;
    const shared: SharedCounts = {
      async sync(increments) {
        if (fail) throw new Error('database down');
        for (const buckets of increments.values()) for (const count of buckets.values()) pushed += count;
        return new Map([['a', new Map([[Math.floor(1_800_000_000), pushed]])]]);
      },
      async prune() {},
    };
    const errors: unknown[] = [];
    const { nowMs } = clock();
    const limiter = new SlidingWindowRateLimiter({ limitPerWindow: 3, nowMs, shared, syncIntervalMs: 60_000, onSyncError: (e) => errors.push(e) });
    limiter.consume('a');
    limiter.consume('a');
    await limiter.sync();
    assert.ok(errors.length >= 1, 'the failure was reported');
    limiter.consume('a');
    assert.ok(limiter.consume('a') > 0, 'the two unpushed requests still count');
    fail = false;
    await limiter.sync();
    assert.equal(pushed, 3);
    assert.ok(limiter.consume('a') > 0);
    await limiter.close();
  });
});
