// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RouteWaits } from '../../../src/domain/tunnels/route-waits.js';

/**
 * CLUSTER.md §3: a connection whose endpoint is unrouted while its agent moves between instances
 * waits, bounded in time and in number, for the route to appear, instead of a 404 or 502.
 */
describe('RouteWaits', () => {
  it('answers at once when the route is there, without waiting', async () => {
    const waits = new RouteWaits(60_000);
    const started = Date.now();
    assert.equal(await waits.until(() => 'pool'), 'pool');
    assert.ok(Date.now() - started < 50);
    assert.equal(waits.waiting, 0);
  });

  it('a waiter is served once a change brings the route (woken, not polled)', async () => {
    const waits = new RouteWaits(60_000);
    let route: string | undefined;
    const waited = waits.until(() => route);
    assert.equal(waits.waiting, 1);
    route = 'pool';
    const started = Date.now();
    waits.wake();
    assert.equal(await waited, 'pool');
    assert.ok(Date.now() - started < 50);
    assert.equal(waits.waiting, 0);
  });

  it('a change nobody announced is still found by the poll', async () => {
    const waits = new RouteWaits(60_000);
    let route: string | undefined;
    const waited = waits.until(() => route);
    setTimeout(() => (route = 'pool'), 50);
    assert.equal(await waited, 'pool');
  });

  it('gives up after the wait: undefined (the caller answers 404 or 502)', async () => {
    const waits = new RouteWaits(100);
    const started = Date.now();
    assert.equal(await waits.until(() => undefined), undefined);
    const waited = Date.now() - started;
    assert.ok(waited >= 90 && waited < 1_000, `waited ${waited} ms`);
    assert.equal(waits.waiting, 0);
  });

  it('beyond the most waiters, a new one is answered at once', async () => {
    const waits = new RouteWaits(60_000, 2);
    let route: string | undefined;
    const first = waits.until(() => route);
    const second = waits.until(() => route);
    const started = Date.now();
    assert.equal(await waits.until(() => route), undefined);
    assert.ok(Date.now() - started < 50);
    assert.equal(waits.waiting, 2);
    route = 'pool';
    waits.wake();
    assert.deepEqual(await Promise.all([first, second]), ['pool', 'pool']);
    assert.equal(waits.waiting, 0);
  });
});
