import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TrafficRollup } from '../../src/domain/traffic-history/rollup.js';
import type { TrafficTotals } from '../../src/domain/traffic-history/types.js';
import { Metrics } from '../../src/observability/metrics.js';
import { SqlTrafficMinutes } from '../../src/storage/repositories/traffic-minutes.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

// GET /traffic_history: each instance's per-minute counts (TrafficRollup), summed (CONSOLE.md §1-2).
interface History {
  step_seconds: number;
  times: number[];
  connections: number[];
  requests: number[];
  bytes_in: number[];
  bytes_out: number[];
  denials: Record<string, number[]>;
  instances: number;
}

function totals(connections: number, requests: number, bytesIn: number, bytesOut: number, denials: Record<string, number> = {}): TrafficTotals {
  return { connections, requests, bytesIn, bytesOut, denials: new Map(Object.entries(denials)) };
}

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

const history = async () => {
  const response = await t.call({ method: 'GET', url: '/traffic_history' });
  assert.equal(response.statusCode, 200, response.body);
  return json<History>(response);
};

describe('GET /traffic_history', () => {
  it('with no counts yet: sixty minutes of zeros, the last one the current minute', async () => {
    const before = Math.floor(Date.now() / 60_000) * 60;
    const empty = await history();
    assert.equal(empty.step_seconds, 60);
    assert.equal(empty.times.length, 60);
    assert.ok(empty.times.at(-1) === before || empty.times.at(-1) === before + 60);
    assert.equal(empty.times[1]! - empty.times[0]!, 60);
    assert.deepEqual(empty.connections, new Array(60).fill(0));
    assert.deepEqual(empty.denials, {});
    assert.equal(empty.instances, 0);
  });

  it('sums the growth two instances wrote, per minute, without counting anything twice', async () => {
    let clock = Date.now();
    const repository = new SqlTrafficMinutes(t.store);
    let a = totals(3, 10, 1000, 5000, { 'restrict-ips': 1 });
    let b = totals(2, 0, 200, 300, { deny: 4 });
    const fail = (error: unknown) => assert.fail(String(error));
    const rollupA = new TrafficRollup(repository, 'inst_a', () => a, fail, () => clock);
    const rollupB = new TrafficRollup(repository, 'inst_b', () => b, fail, () => clock);
    await Promise.all([rollupA.flush(), rollupB.flush()]);
    a = totals(4, 12, 1100, 5100, { 'restrict-ips': 1 });
    await rollupA.flush();
    await rollupA.flush(); // nothing grew: nothing added
    const now = await history();
    const last = now.times.length - 1;
    assert.equal(now.times[last], Math.floor(clock / 60_000) * 60);
    assert.equal(now.connections[last], 6);
    assert.equal(now.requests[last], 12);
    assert.equal(now.bytes_in[last], 1300);
    assert.equal(now.bytes_out[last], 5400);
    assert.equal(now.denials['restrict-ips']?.[last], 1);
    assert.equal(now.denials.deny?.[last], 4);
    assert.equal(now.instances, 2);
    assert.equal(now.connections.slice(0, last).reduce((x, y) => x + y, 0), 0);

    // A minute later the growth lands in the next minute; the earlier one stays.
    clock += 60_000;
    b = totals(7, 0, 200, 300, { deny: 4 });
    await rollupB.flush();
    const repository2 = new SqlTrafficMinutes(t.store);
    const rows = await repository2.sums(Math.floor(clock / 60_000) * 60);
    assert.deepEqual(rows, [{ minute: Math.floor(clock / 60_000) * 60, series: 'connections', value: 5 }]);
  });

  it('a failed write is logged and added to the next one; minutes past two hours are pruned', async () => {
    const base = new SqlTrafficMinutes(t.store);
    let failing = true;
    const flaky: typeof base = Object.assign(Object.create(base) as typeof base, {
      add: (id: string, counts: Parameters<typeof base.add>[1]) => (failing ? Promise.reject(new Error('database unavailable')) : base.add(id, counts)),
    });
    const errors: unknown[] = [];
    const clock = Date.parse('2026-01-01T10:00:30Z');
    let current = totals(1, 0, 0, 0);
    const rollup = new TrafficRollup(flaky, 'inst_flaky', () => current, (error) => errors.push(error), () => clock);
    await rollup.flush();
    assert.equal(errors.length, 1);
    failing = false;
    current = totals(3, 0, 0, 0);
    await rollup.flush();
    const minute = Math.floor(clock / 60_000) * 60;
    const ofMinute = async () => (await base.sums(minute)).filter((row) => row.minute === minute);
    assert.deepEqual(await ofMinute(), [{ minute, series: 'connections', value: 3 }]);
    // Three hours later: the old minute is pruned by the next write.
    const later = new TrafficRollup(base, 'inst_flaky', () => current, (error) => errors.push(error), () => clock + 3 * 3600_000);
    await later.flush();
    assert.deepEqual(await ofMinute(), []);
  });

  it('needs an API key', async () => {
    expectError(await t.call({ method: 'GET', url: '/traffic_history', key: null }), 401, 'ERR_NGROK_200');
  });
});

describe('Metrics.trafficTotals', () => {
  it('sums the public counters: connections, HTTP requests, bytes each way, denials by action (HTTP deny answers included)', () => {
    const metrics = new Metrics();
    metrics.observeConnection('https', 'allowed', 100, 2000);
    metrics.observeConnection('tcp', 'denied', 10, 0);
    metrics.observeHttpRequest('https');
    metrics.observeHttpRequest('https');
    metrics.observePolicy(0.001, 'restrict-ips');
    metrics.observePolicy(0.001, 'deny');
    metrics.observePolicyAction('deny', 'on_http_request');
    metrics.observePolicyAction('add-headers', 'on_http_request');
    const sums = metrics.trafficTotals();
    assert.deepEqual({ ...sums, denials: Object.fromEntries(sums.denials) }, {
      connections: 2,
      requests: 2,
      bytesIn: 110,
      bytesOut: 2000,
      denials: { 'restrict-ips': 1, deny: 2 },
    });
  });
});
