// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { labelNames, MovingNames, namesServing } from '../../../src/domain/tunnels/moving-names.js';

/**
 * CLUSTER.md §3: only a name whose agent may be moving between instances waits for its route; a
 * name nobody serves is answered at once (no 4 s per unknown name, no waiters pinned by them).
 */
describe('MovingNames', () => {
  const WINDOW = 15_000;
  /** A memory on a clock the test moves; `start` ms after it was made, past its start-up window. */
  function started(start = WINDOW, maxRemembered?: number) {
    let now = 1_000_000;
    const moving = new MovingNames({ windowMs: WINDOW, now: () => now, ...(maxRemembered === undefined ? {} : { maxRemembered }) });
    now += start;
    return { moving, advance: (ms: number) => (now += ms) };
  }

  it('every name may be moving during the first moments after the instance started, none after', () => {
    const { moving, advance } = started(0);
    assert.equal(moving.mayMove(['http://never.example']), true);
    advance(WINDOW - 1);
    assert.equal(moving.mayMove(['http://never.example']), true);
    advance(1);
    assert.equal(moving.mayMove(['http://never.example']), false);
  });

  it('a name never routed is not moving', () => {
    const { moving } = started();
    assert.equal(moving.mayMove(['http://never.example', 'tcp://burrow.example:20001']), false);
    assert.equal(moving.mayMove([]), false);
  });

  it('a withdrawn URL is moving for the window after its withdrawal, then forgotten', () => {
    const { moving, advance } = started();
    moving.withdrawn('http://app.example');
    assert.equal(moving.mayMove(['http://app.example']), true);
    assert.equal(moving.mayMove(['https://app.example']), false, 'another scheme is another endpoint');
    advance(WINDOW - 1);
    assert.equal(moving.mayMove(['http://other.example', 'http://app.example']), true, 'any of the URLs');
    advance(1);
    assert.equal(moving.mayMove(['http://app.example']), false);
    assert.equal(moving.remembered, 0);
  });

  it('a URL withdrawn again is remembered from its latest withdrawal', () => {
    const { moving, advance } = started();
    moving.withdrawn('tcp://burrow.example:20001');
    advance(10_000);
    moving.withdrawn('http://b.example');
    moving.withdrawn('tcp://burrow.example:20001');
    advance(10_000);
    assert.equal(moving.mayMove(['tcp://burrow.example:20001']), true);
    assert.equal(moving.mayMove(['http://b.example']), true);
    advance(5_000);
    assert.equal(moving.mayMove(['tcp://burrow.example:20001']), false);
  });

  it('remembers a bounded number of withdrawals: the oldest go first', () => {
    const { moving, advance } = started(WINDOW, 3);
    for (const name of ['a', 'b', 'c', 'd']) {
      moving.withdrawn(`http://${name}.example`);
      advance(1);
    }
    assert.equal(moving.remembered, 3);
    assert.equal(moving.mayMove(['http://a.example']), false);
    for (const name of ['b', 'c', 'd']) assert.equal(moving.mayMove([`http://${name}.example`]), true);
    for (let i = 0; i < 10_000; i++) moving.withdrawn(`http://flood-${i}.example`);
    assert.equal(moving.remembered, 3);
  });

  it('expired withdrawals leave the memory as new ones come', () => {
    const { moving, advance } = started();
    for (let i = 0; i < 100; i++) moving.withdrawn(`http://old-${i}.example`);
    advance(WINDOW);
    moving.withdrawn('http://new.example');
    assert.equal(moving.remembered, 1);
  });

  it("a TLS edge's backend may be moving when a labeled tunnel it matched was withdrawn: same account, its labels a subset", () => {
    const { moving, advance } = started();
    for (const name of labelNames('acct_1', { app: 'web', zone: 'eu' })) moving.withdrawn(name);
    assert.equal(moving.mayMoveAll(labelNames('acct_1', { app: 'web' })), true);
    assert.equal(moving.mayMoveAll(labelNames('acct_1', { app: 'web', zone: 'eu' })), true);
    assert.equal(moving.mayMoveAll(labelNames('acct_1', {})), true, 'a backend of no labels matches every labeled tunnel');
    assert.equal(moving.mayMoveAll(labelNames('acct_1', { app: 'web', zone: 'us' })), false, 'the tunnel did not match it');
    assert.equal(moving.mayMoveAll(labelNames('acct_2', { app: 'web' })), false, 'another account');
    assert.equal(moving.mayMove(labelNames('acct_1', { app: 'web' })), true);
    advance(WINDOW);
    assert.equal(moving.mayMoveAll(labelNames('acct_1', { app: 'web' })), false, 'forgotten after the window');
  });

  it('an edge without a backend never waits, not even in the first moments', () => {
    const { moving } = started(0);
    assert.equal(moving.mayMoveAll([]), false);
    assert.equal(moving.mayMoveAll(labelNames('acct_1', { app: 'web' })), true);
  });
});

describe('namesServing', () => {
  it('the name, then the wildcards covering it, most specific first, never one of a single label', () => {
    assert.deepEqual(namesServing('a.b.example.com'), ['a.b.example.com', '*.b.example.com', '*.example.com']);
    assert.deepEqual(namesServing('app.example'), ['app.example']);
    assert.deepEqual(namesServing('localhost'), ['localhost']);
  });
});
