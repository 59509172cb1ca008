// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AuthThrottle } from '../../../src/domain/tunnels/auth-throttle.js';

describe('AuthThrottle: failed Auths per address', () => {
  function throttle(maxAddresses?: number) {
    let now = 1_000_000;
    const t = new AuthThrottle({ burst: 3, refillPerSecond: 0.5, nowMs: () => now, ...(maxAddresses ? { maxAddresses } : {}) });
    return { t, advance: (ms: number) => (now += ms) };
  }

  it('allows a burst of failures, then refuses the address until a token refilled', () => {
    const { t, advance } = throttle();
    assert.equal(t.waitSeconds('1.2.3.4'), 0);
    assert.equal(t.failed('1.2.3.4'), false);
    assert.equal(t.failed('1.2.3.4'), false);
    assert.equal(t.failed('1.2.3.4'), true, 'the third failure empties the bucket');
    assert.equal(t.waitSeconds('1.2.3.4'), 2, 'one token at 0.5/s');
    assert.equal(t.waitSeconds('5.6.7.8'), 0, 'another address is not affected');
    advance(1_000);
    assert.equal(t.waitSeconds('1.2.3.4'), 1);
    advance(1_000);
    assert.equal(t.waitSeconds('1.2.3.4'), 0);
    assert.equal(t.failed('1.2.3.4'), true, 'the one refilled token is taken at once');
    assert.equal(t.failed('1.2.3.4'), false, 'reported once per emptying');
  });

  it('forgets an address whose bucket refilled, and tracks at most maxAddresses', () => {
    const { t, advance } = throttle(2);
    for (let i = 0; i < 3; i++) t.failed('a');
    t.failed('b');
    t.failed('c'); // evicts a, the least recent
    assert.equal(t.waitSeconds('a'), 0);
    for (let i = 0; i < 3; i++) t.failed('c');
    assert.ok(t.waitSeconds('c') > 0);
    advance(60_000);
    assert.equal(t.waitSeconds('c'), 0);
  });
});
