import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { newId } from '../../src/domain/ids.js';
import { createLogger } from '../../src/observability/logger.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { INSTANCE_STALE_MS, InstanceKeeper } from '../../src/tunnels/instance-keeper.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';

/**
 * TUNNELS.md §2 and §7: the rows of an instance that died without cleaning up leave the API once
 * it has not been seen for INSTANCE_STALE_MS; a live instance's rows stay.
 */
let t: TestApp;
let repo: SqlTunnelRepository;
before(async () => {
  t = await createTestApp();
  repo = new SqlTunnelRepository(t.store);
});
after(() => t.close());

async function sessionOf(instanceId: string): Promise<string> {
  const { id, createdAt } = newId('ts');
  await repo.insertSession({
    id,
    accountId: t.admin.principal.accountId,
    credentialId: newId('cr').id,
    instanceId,
    ip: '127.0.0.1',
    metadata: '',
    os: 'linux',
    agentVersion: '1.7.0',
    region: 'local',
    startedAt: createdAt,
    stopUnsupported: '',
    restartUnsupported: '',
    updateUnsupported: '',
  });
  await repo.insertTunnel({
    id: newId('tn').id,
    accountId: t.admin.principal.accountId,
    sessionId: id,
    instanceId,
    proto: '',
    publicUrl: null,
    labels: { app: 'web' },
    forwardsTo: 'localhost:80',
    metadata: '',
    startedAt: createdAt,
    endpointId: null,
  });
  return id;
}

async function listedSessions(): Promise<string[]> {
  return json<{ tunnel_sessions: { id: string }[] }>(await t.call({ method: 'GET', url: '/tunnel_sessions' })).tunnel_sessions.map((s) => s.id);
}

it("sweeps a dead instance's sessions and tunnels, and keeps a live one's", async () => {
  let now = 10_000_000;
  const dead = newId('inst').id;
  const alive = newId('inst').id;
  await repo.beat(dead, new Date().toISOString(), now);
  const deadSession = await sessionOf(dead);
  const keeper = new InstanceKeeper(alive, repo, createLogger('silent'), () => now);
  await keeper.start();
  const liveSession = await sessionOf(alive);
  assert.deepEqual((await listedSessions()).sort(), [deadSession, liveSession].sort());

  now += INSTANCE_STALE_MS - 1;
  await repo.beat(alive, '', now);
  await keeper.sweep();
  assert.equal((await listedSessions()).length, 2, 'not yet stale');

  now += 2;
  await keeper.sweep();
  assert.deepEqual(await listedSessions(), [liveSession]);
  const tunnels = json<{ tunnels: { tunnel_session: { id: string } }[] }>(await t.call({ method: 'GET', url: '/tunnels' })).tunnels;
  assert.deepEqual(tunnels.map((tunnel) => tunnel.tunnel_session.id), [liveSession]);

  await keeper.stop();
  assert.deepEqual(await listedSessions(), [], 'a clean stop removes its own rows');
});

it("a start that reuses the previous run's id removes what it left, and says so only when it left something", async () => {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
  const clean = newId('inst').id;
  const cleanKeeper = new InstanceKeeper(clean, repo, logger);
  await cleanKeeper.start({ previousRunCrashed: true });
  await cleanKeeper.stop();
  assert.ok(!lines.some((line) => line.includes('previous run')), `nothing was left, nothing is said: ${lines.join('')}`);

  const crashed = newId('inst').id;
  await repo.beat(crashed, new Date().toISOString(), Date.now());
  const left = await sessionOf(crashed);
  const keeper = new InstanceKeeper(crashed, repo, logger);
  await keeper.start({ previousRunCrashed: true });
  assert.ok(!(await listedSessions()).includes(left), 'the crashed run\'s session is gone');
  const said = lines.map((line) => JSON.parse(line) as { msg: string; sessions?: number }).filter((line) => line.msg.includes('previous run'));
  assert.equal(said.length, 1);
  assert.equal(said[0]!.sessions, 1);
  await keeper.stop();
});
