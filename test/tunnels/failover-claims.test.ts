import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import { AgentRefusal } from '../../src/domain/tunnels/agent-errors.js';
import { Failover } from '../../src/domain/tunnels/failover.js';
import { AgentIngress } from '../../src/domain/tunnels/ingress.js';
import type { Endpoint } from '../../src/domain/tunnels/types.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * Failover over the real tables (CLUSTER.md §3): a bind on this instance meeting a name, port or
 * URL of an instance proven gone takes it at once; one of a live instance is refused as before;
 * a claim whose agent moved to another instance passes to it when its first holder lets go.
 */
let t: TestApp;
let repo: SqlTunnelRepository;
const edge = { edgeDomain: 'burrow.localhost', publicHost: '127.0.0.1', tcpPorts: [{ first: 20000, last: 20009 }], region: 'local', httpPort: 80, tlsPort: 443 };
const limits = { maxSessionsPerAccount: 0, maxEndpointsPerSession: 0, maxPolicyRules: 10 };

before(async () => {
  t = await createTestApp();
  repo = new SqlTunnelRepository(t.store);
});
after(() => t.close());

/** An ingress for instance `me` whose failover sleeps by moving a fake clock (and lets `onSleep` beat). */
function ingressOf(me: string, clock: { now: number }, onSleep: () => Promise<void> = async () => {}): AgentIngress {
  const failover = new Failover(repo, me, async () => false, {
    now: () => clock.now,
    sleep: async (ms) => {
      clock.now += ms;
      await onSleep();
    },
  });
  return new AgentIngress(repo, edge, limits, me, { now: () => new Date(clock.now) }, failover);
}

function endpointRow(instanceId: string, accountId: string, url: string, host: string, port: number, proto: Endpoint['proto']): Endpoint {
  const now = new Date().toISOString();
  return { id: newId('ep').id, accountId, instanceId, url, proto, host, port, sessionId: newBareId('ts'), principalId: newBareId('usr'), trafficPolicy: '', poolingEnabled: false, createdAt: now, updatedAt: now };
}

async function claimRow(key: string): Promise<{ account_id: string; instance_id: string } | undefined> {
  return t.store.db.selectFrom('tunnel_claims').select(['account_id', 'instance_id']).where('key', '=', key).executeTakeFirst();
}

describe('claims of another instance', () => {
  it("another account's name and port held by an instance that died: released once it is proven gone, then claimed", async () => {
    const clock = { now: Date.now() };
    const [dead, me, other, mine] = [newBareId('inst'), newBareId('inst'), newBareId('acct'), newBareId('acct')];
    await repo.beat(dead, '', clock.now - 500);
    await repo.claim('host:failover.example.com', other, dead, '');
    await repo.claim('tcp:20003', other, dead, '');
    const ingress = ingressOf(me, clock);
    await ingress.claim({ kind: 'hostname', hostname: 'failover.example.com' }, mine);
    assert.deepEqual(await claimRow('host:failover.example.com'), { account_id: mine, instance_id: me });
    assert.equal(await repo.instanceRecord(dead), undefined, 'the dead instance was removed with its rows');
    await ingress.claim({ kind: 'tcp', port: 20003 }, mine);
    assert.deepEqual(await claimRow('tcp:20003'), { account_id: mine, instance_id: me });
  });

  it("another account's name held by a live instance: refused (320), nothing of it touched", async () => {
    const clock = { now: Date.now() };
    const [live, me, other, mine] = [newBareId('inst'), newBareId('inst'), newBareId('acct'), newBareId('acct')];
    await repo.beat(live, '', clock.now - 800);
    await repo.claim('host:live.example.com', other, live, '');
    const started = clock.now;
    const ingress = ingressOf(me, clock, () => repo.beat(live, '', clock.now));
    await assert.rejects(ingress.claim({ kind: 'hostname', hostname: 'live.example.com' }, mine), (error: unknown) => error instanceof AgentRefusal && error.code === 320);
    assert.ok(clock.now - started <= 1_000, 'answered within a beat');
    assert.deepEqual(await claimRow('host:live.example.com'), { account_id: other, instance_id: live });
    assert.notEqual(await repo.instanceRecord(live), undefined);
  });

  it('the same account on another instance shares the claim without a verdict', async () => {
    const clock = { now: Date.now() };
    const [live, me, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    await repo.beat(live, '', clock.now);
    await repo.claim('host:shared.example.com', account, live, '');
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
    await repo.beat(dead, '', clock.now - 100);
    assert.ok(await repo.insertEndpoint(endpointRow(dead, account, url, 'moved.example.com', 443, 'https')));
    const mine = endpointRow(me, account, url, 'moved.example.com', 443, 'https');
    assert.deepEqual(await ingressOf(me, clock).openEndpoint(mine), { endpointId: mine.id, joined: false });
    assert.equal((await repo.endpointAt(url))?.instanceId, me);
  });

  it('a URL served by a live instance: undefined (334 for the bind), its endpoint kept', async () => {
    const clock = { now: Date.now() };
    const [live, me, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const url = 'https://busy.example.com';
    await repo.beat(live, '', clock.now);
    assert.ok(await repo.insertEndpoint(endpointRow(live, account, url, 'busy.example.com', 443, 'https')));
    assert.equal(await ingressOf(me, clock, () => repo.beat(live, '', clock.now)).openEndpoint(endpointRow(me, account, url, 'busy.example.com', 443, 'https')), undefined);
    assert.equal((await repo.endpointAt(url))?.instanceId, live);
  });
});

describe('a claim whose agent moved to another instance', () => {
  it('passes to the instance now serving it when the first holder releases it, or stops, and goes when nobody serves it', async () => {
    const [first, second, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    await repo.claim('tcp:20005', account, first, '');
    await repo.claim('host:roam.example.com', account, first, '');
    await repo.insertEndpoint(endpointRow(second, account, 'tcp://127.0.0.1:20005', '127.0.0.1', 20005, 'tcp'));
    await repo.insertEndpoint(endpointRow(second, account, 'https://roam.example.com', 'roam.example.com', 443, 'https'));
    await repo.release('tcp:20005', account, first);
    assert.deepEqual(await claimRow('tcp:20005'), { account_id: account, instance_id: second });
    await repo.removeInstance(first);
    assert.deepEqual(await claimRow('host:roam.example.com'), { account_id: account, instance_id: second });
    await repo.claim('host:alone.example.com', account, first, '');
    await repo.release('host:alone.example.com', account, first);
    assert.equal(await claimRow('host:alone.example.com'), undefined);
  });

  it("the first holder's teardown removes only its own tunnel and session rows, not those the resumed session wrote elsewhere", async () => {
    const [first, second, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const { id: sessionId, createdAt } = newId('ts');
    const tunnelId = newBareId('tn');
    const session = { id: sessionId, accountId: account, credentialId: newBareId('cr'), instanceId: second, ip: '', metadata: '', os: '', agentVersion: '', region: 'local', startedAt: createdAt, stopUnsupported: '', restartUnsupported: '', updateUnsupported: '' };
    await repo.insertSession(session);
    await repo.insertTunnel({ id: tunnelId, accountId: account, sessionId, instanceId: second, proto: 'https', publicUrl: 'https://x.example.com', labels: null, forwardsTo: '', metadata: '', startedAt: createdAt, endpointId: null });
    await repo.deleteTunnel(tunnelId, first);
    await repo.deleteSession(sessionId, first);
    assert.ok(await t.store.db.selectFrom('tunnels').select('id').where('id', '=', tunnelId).executeTakeFirst());
    assert.ok(await t.store.db.selectFrom('tunnel_sessions').select('id').where('id', '=', sessionId).executeTakeFirst());
    await repo.deleteSession(sessionId, second);
    assert.equal(await t.store.db.selectFrom('tunnels').select('id').where('id', '=', tunnelId).executeTakeFirst(), undefined);
  });
});
