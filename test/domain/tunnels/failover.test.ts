// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Failover, GONE_AFTER_SILENCE_MS, judgeInstance, type FailoverRepository, type InstanceRecord } from '../../../src/domain/tunnels/failover.js';

/**
 * CLUSTER.md §3: a dead instance's names, ports and URLs are released for a bind that meets them
 * as soon as the instance is proven gone; a live instance is never robbed.
 */
const T0 = 1_000_000;
const row = (lastSeenAtMs: number, clusterAddr: string | null = null): InstanceRecord => ({ lastSeenAtMs, clusterAddr });

describe('judgeInstance', () => {
  it('no row: gone (removed or swept)', () => {
    assert.equal(judgeInstance(undefined, undefined, T0, false), 'gone');
    assert.equal(judgeInstance(row(T0), undefined, T0, false), 'gone');
  });
  it('an address that answers, or a beat seen while watching: alive, however old the row', () => {
    assert.equal(judgeInstance(row(T0 - 60_000), row(T0 - 60_000), T0, true), 'alive');
    assert.equal(judgeInstance(row(T0 - 2_000), row(T0 - 1), T0, false), 'alive');
  });
  it('silent for GONE_AFTER_SILENCE_MS: gone; less: not known yet', () => {
    assert.equal(judgeInstance(row(T0), row(T0), T0 + GONE_AFTER_SILENCE_MS, false), 'gone');
    assert.equal(judgeInstance(row(T0), row(T0), T0 + GONE_AFTER_SILENCE_MS - 1, false), 'unsure');
    assert.equal(judgeInstance(row(T0), row(T0), T0, false), 'unsure');
  });
});

/** An instances table of one holder, on a fake clock that sleeping advances. */
function world(holder: InstanceRecord | undefined, options: { beatsEveryMs?: number; answers?: boolean } = {}) {
  let now = T0;
  let record = holder;
  const removed: string[] = [];
  const probed: string[] = [];
  const repository: FailoverRepository = {
    async instanceRecord() {
      return record;
    },
    async removeInstance(id) {
      removed.push(id);
      record = undefined;
      return 2;
    },
  };
  const takeovers: string[] = [];
  const failover = new Failover(repository, 'inst_me', async (address) => {
    probed.push(address);
    return options.answers ?? false;
  }, {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
      if (record && options.beatsEveryMs && now - record.lastSeenAtMs >= options.beatsEveryMs) record = { ...record, lastSeenAtMs: now };
    },
    onTakeover: (id) => takeovers.push(id),
  });
  return { failover, removed, probed, takeovers, elapsed: () => now - T0 };
}

describe('Failover.releaseIfGone', () => {
  it('an instance killed just now: its rows go once it has been silent for the bound, not after the 60 s sweep', async () => {
    const w = world(row(T0 - 200, '127.0.0.1:1'));
    assert.equal(await w.failover.releaseIfGone('inst_dead'), true);
    assert.deepEqual(w.removed, ['inst_dead']);
    assert.deepEqual(w.takeovers, ['inst_dead']);
    assert.ok(w.elapsed() >= GONE_AFTER_SILENCE_MS - 200 && w.elapsed() <= GONE_AFTER_SILENCE_MS, `waited ${w.elapsed()} ms`);
    assert.deepEqual(w.probed, ['127.0.0.1:1'], 'its address was asked once');
  });

  it('an instance silent for long: released without waiting', async () => {
    const w = world(row(T0 - 30_000));
    assert.equal(await w.failover.releaseIfGone('inst_dead'), true);
    assert.equal(w.elapsed(), 0);
  });

  it('an instance whose row is already gone: nothing to remove, the bind may go on', async () => {
    const w = world(undefined);
    assert.equal(await w.failover.releaseIfGone('inst_gone'), true);
    assert.deepEqual(w.removed, []);
  });

  it('a live instance that beats while watched keeps everything; the verdict comes within a beat', async () => {
    const w = world(row(T0 - 900), { beatsEveryMs: 1_000 });
    assert.equal(await w.failover.releaseIfGone('inst_live'), false);
    assert.deepEqual(w.removed, []);
    assert.ok(w.elapsed() <= 1_000, `waited ${w.elapsed()} ms`);
  });

  it('a live instance whose beats stalled but whose cluster address answers keeps everything, at once', async () => {
    const w = world(row(T0 - 10_000, '127.0.1.1:7000'), { answers: true });
    assert.equal(await w.failover.releaseIfGone('inst_busy'), false);
    assert.deepEqual(w.removed, []);
    assert.equal(w.elapsed(), 0);
  });

  it('this instance is never judged', async () => {
    const w = world(row(T0 - 30_000));
    assert.equal(await w.failover.releaseIfGone('inst_me'), false);
    assert.deepEqual(w.removed, []);
  });

  it('binds meeting one dead instance at once share one watch and one removal', async () => {
    const w = world(row(T0 - 100));
    const verdicts = await Promise.all([w.failover.releaseIfGone('inst_dead'), w.failover.releaseIfGone('inst_dead'), w.failover.releaseIfGone('inst_dead')]);
    assert.deepEqual(verdicts, [true, true, true]);
    assert.deepEqual(w.removed, ['inst_dead']);
  });
});
