import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import { AgentRefusal } from '../../src/domain/tunnels/agent-errors.js';
import { Failover } from '../../src/domain/tunnels/failover.js';
import { AgentIngress } from '../../src/domain/tunnels/ingress.js';
import { endpointOf, TABLES_EDGE, TABLES_LIMITS, tunnelTables } from '../helpers/tunnel-tables.js';

/**
 * Failover over the real tables (CLUSTER.md §3): a bind on this instance meeting a name, port or
 * URL of an instance proven gone takes it at once; one of a live instance is refused as before;
 * a claim whose agent moved to another instance passes to it when its first holder lets go.
 */
const tables = tunnelTables();
const claimRow = tables.claimRow;

/** An ingress for instance `me` whose failover sleeps by moving a fake clock (and lets `onSleep` beat). */
function ingressOf(me: string, clock: { now: number }, onSleep: () => Promise<void> = async () => {}): AgentIngress {
  const failover = new Failover(tables.repo, me, async () => false, {
    now: () => clock.now,
    sleep: async (ms) => {
      clock.now += ms;
      await onSleep();
    },
  });
  return new AgentIngress(tables.repo, TABLES_EDGE, TABLES_LIMITS, me, { now: () => new Date(clock.now) }, failover);
}

describe('claims of another instance', () => {
  it("another account's name and port held by an instance that died: released once it is proven gone, then claimed", async () => {
    const clock = { now: Date.now() };
    const [dead, me, other, mine] = [newBareId('inst'), newBareId('inst'), newBareId('acct'), newBareId('acct')];
    await tables.repo.beat(dead, '', clock.now - 500);
    await tables.repo.claim('host:failover.example.com', other, dead, '');
    await tables.repo.claim('tcp:20003', other, dead, '');
    const ingress = ingressOf(me, clock);
    await ingress.claim({ kind: 'hostname', hostname: 'failover.example.com' }, mine);
    assert.deepEqual(await claimRow('host:failover.example.com'), { account_id: mine, instance_id: me });
    assert.equal(await tables.repo.instanceRecord(dead), undefined, 'the dead instance was removed with its rows');
    await ingress.claim({ kind: 'tcp', port: 20003 }, mine);
    assert.deepEqual(await claimRow('tcp:20003'), { account_id: mine, instance_id: me });
  });

  it("another account's name held by a live instance: refused (320), nothing of it touched", async () => {
    const clock = { now: Date.now() };
    const [live, me, other, mine] = [newBareId('inst'), newBareId('inst'), newBareId('acct'), newBareId('acct')];
    await tables.repo.beat(live, '', clock.now - 800);
    await tables.repo.claim('host:live.example.com', other, live, '');
    const started = clock.now;
    const ingress = ingressOf(me, clock, () => tables.repo.beat(live, '', clock.now));
    await assert.rejects(ingress.claim({ kind: 'hostname', hostname: 'live.example.com' }, mine), (error: unknown) => error instanceof AgentRefusal && error.code === 320);
    assert.ok(clock.now - started <= 1_000, 'answered within a beat');
    assert.deepEqual(await claimRow('host:live.example.com'), { account_id: other, instance_id: live });
    assert.notEqual(await tables.repo.instanceRecord(live), undefined);
  });

  it('the same account on another instance shares the claim without a verdict', async () => {
    const clock = { now: Date.now() };
    const [live, me, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    await tables.repo.beat(live, '', clock.now);
    await tables.repo.claim('host:shared.example.com', account, live, '');
    const started = clock.now;
    await ingressOf(me, clock).claim({ kind: 'hostname', hostname: 'shared.example.com' }, account);
    assert.equal(clock.now, started, 'no wait');
    assert.deepEqual(await claimRow('host:shared.example.com'), { account_id: account, instance_id: live });
  });
});

describe('endpoint URLs of another instance', () => {
  it('a URL served by an instance that died: its endpoint goes and the new one is written', async () => {
    const clock = { now: Date.now() };
    const [dead, me, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const url = 'https://moved.example.com';
    await tables.repo.beat(dead, '', clock.now - 100);
    assert.ok(await tables.repo.insertEndpoint(endpointOf(dead, account, 'moved.example.com')));
    const mine = endpointOf(me, account, 'moved.example.com');
    assert.deepEqual(await ingressOf(me, clock).openEndpoint(mine), { endpointId: mine.id, joined: false });
    assert.equal((await tables.repo.endpointAt(url))?.instanceId, me);
  });

  it('a URL served by a live instance: undefined (334 for the bind), its endpoint kept', async () => {
    const clock = { now: Date.now() };
    const [live, me, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const url = 'https://busy.example.com';
    await tables.repo.beat(live, '', clock.now);
    assert.ok(await tables.repo.insertEndpoint(endpointOf(live, account, 'busy.example.com')));
    assert.equal(await ingressOf(me, clock, () => tables.repo.beat(live, '', clock.now)).openEndpoint(endpointOf(me, account, 'busy.example.com')), undefined);
    assert.equal((await tables.repo.endpointAt(url))?.instanceId, live);
  });
});

describe('a claim whose agent moved to another instance', () => {
  it('passes to the instance now serving it when the first holder releases it, or stops, and goes when nobody serves it', async () => {
    const [first, second, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    await tables.repo.claim('tcp:20005', account, first, '');
    await tables.repo.claim('host:roam.example.com', account, first, '');
    await tables.repo.insertEndpoint(endpointOf(second, account, '127.0.0.1', { proto: 'tcp', port: 20005, url: 'tcp://127.0.0.1:20005' }));
    await tables.repo.insertEndpoint(endpointOf(second, account, 'roam.example.com'));
    await tables.repo.release('tcp:20005', account, first);
    assert.deepEqual(await claimRow('tcp:20005'), { account_id: account, instance_id: second });
    await tables.repo.removeInstance(first);
    assert.deepEqual(await claimRow('host:roam.example.com'), { account_id: account, instance_id: second });
    await tables.repo.claim('host:alone.example.com', account, first, '');
    await tables.repo.release('host:alone.example.com', account, first);
    assert.equal(await claimRow('host:alone.example.com'), undefined);
  });

  it("the first holder's teardown removes only its own tunnel and session rows, not those the resumed session wrote elsewhere", async () => {
    const [first, second, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const { id: sessionId, createdAt } = newId('ts');
    const tunnelId = newBareId('tn');
    const session = { id: sessionId, accountId: account, credentialId: newBareId('cr'), instanceId: second, ip: '', metadata: '', os: '', agentVersion: '', region: 'local', startedAt: createdAt, stopUnsupported: '', restartUnsupported: '', updateUnsupported: '' };
    await tables.repo.insertSession(session);
    await tables.repo.insertTunnel({ id: tunnelId, accountId: account, sessionId, instanceId: second, proto: 'https', publicUrl: 'https://x.example.com', labels: null, forwardsTo: '', metadata: '', startedAt: createdAt, endpointId: null });
    await tables.repo.deleteTunnel(tunnelId, first);
    await tables.repo.deleteSession(sessionId, first);
    assert.ok(await tables.store.db.selectFrom('tunnels').select('id').where('id', '=', tunnelId).executeTakeFirst());
    assert.ok(await tables.store.db.selectFrom('tunnel_sessions').select('id').where('id', '=', sessionId).executeTakeFirst());
    await tables.repo.deleteSession(sessionId, second);
    assert.equal(await tables.store.db.selectFrom('tunnels').select('id').where('id', '=', tunnelId).executeTakeFirst(), undefined);
  });
});
