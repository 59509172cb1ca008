import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentErrors } from '../../../src/domain/tunnels/agent-errors.js';
import { executeBind, type BindPorts, type ExecutedBind } from '../../../src/domain/tunnels/bind-execution.js';
import { planBind, type AcceptedBind, type BindRequestFacts } from '../../../src/domain/tunnels/bind-plan.js';
import type { BindTarget, BoundTarget } from '../../../src/domain/tunnels/binds.js';
import { rebindToken } from '../../../src/domain/tunnels/tokens.js';
import type { Endpoint, Tunnel } from '../../../src/domain/tunnels/types.js';

const edge = { edgeDomain: 'burrow.localhost', publicHost: '127.0.0.1', tcpPorts: [{ first: 20000, last: 20009 }], region: 'local', httpPort: 8081, tlsPort: 8443 };

function planOf(over: Partial<BindRequestFacts> = {}, acl: string[] = []): AcceptedBind {
  const request: BindRequestFacts = {
    id: '', token: '', proto: 'https', hostname: 'a.example.com', domain: '', subdomain: '', addr: '',
    trafficPolicy: null, ipRestriction: null, otherOptions: [], ipPolicyRef: '', bindings: [], poolingEnabled: false,
    forwardsTo: 'f', metadata: 'm', ...over,
  };
  const session = { id: 'ts_1', accountId: 'acct_1', instanceId: 'inst_1', principalId: 'usr_1', tokenHash: 'hash', credentialId: 'cr_1', acl, tunnelCount: 0 };
  const plan = planBind(request, session, { edge, maxEndpointsPerSession: 0, maxPolicyRules: 10 }, false, '2026-11-28T00:00:00.000Z');
  assert.ok(!plan.refusal);
  return plan;
}

interface FakePool {
  endpointId: string;
}

/** Ports that record every step, with the failures a test asks for. */
function fakePorts(options: { taken?: string[]; busyUrls?: string[]; failJoin?: boolean; failInsert?: boolean; failSettle?: boolean } = {}) {
  const log: string[] = [];
  const served: ExecutedBind<FakePool>[] = [];
  const keyOf = (target: BindTarget) => (target.kind === 'tcp' ? `tcp:${target.port ?? 'random'}` : target.hostname);
  const ports: BindPorts<FakePool> = {
    claims: {
      async claim(target) {
        log.push(`claim ${keyOf(target)}`);
        if (options.taken?.includes(keyOf(target))) throw agentErrors.domainTaken(keyOf(target), 'acct_1');
        return (target.kind === 'tcp' ? { kind: 'tcp', port: target.port ?? 20007 } : target) as BoundTarget;
      },
      async release(target) {
        log.push(`release ${keyOf(target)}`);
      },
    },
    pools: {
      mayJoin: (url) => !options.busyUrls?.includes(url),
      async join(url, _pooling, endpoint: Endpoint) {
        log.push(`join ${url}`);
        if (options.failJoin) throw agentErrors.alreadyOnline(url);
        return { endpointId: endpoint.id };
      },
      async closeIfEmpty(url) {
        log.push(`close ${url}`);
      },
      async settle() {
        if (options.failSettle) {
          log.push('settle');
          throw agentErrors.alreadyOnline('raced');
        }
      },
    },
    async insertTunnel(row: Tunnel) {
      log.push(`insert ${row.id}`);
      if (options.failInsert) throw new Error('disk full');
    },
    async deleteTunnel(id) {
      log.push(`delete ${id}`);
    },
    serve(bind) {
      log.push('serve');
      served.push(bind);
    },
  };
  return { ports, log, served };
}

test('executor: claim, join, insert, serve; the row names the pool', async () => {
  const plan = planOf();
  const { ports, log, served } = fakePorts();
  const done = await executeBind(plan, ports);
  assert.deepEqual(log, ['claim a.example.com', 'join https://a.example.com:8443', `insert ${plan.tunnelId}`, 'serve']);
  assert.equal(done.row.endpointId, done.placement.endpoint.id);
  assert.equal(served[0], done);
});

test('executor: a random tcp port is placed where the claim put it', async () => {
  const { ports } = fakePorts();
  const done = await executeBind(planOf({ proto: 'tcp', hostname: '' }), ports);
  assert.equal(done.placement.url, 'tcp://127.0.0.1:20007');
});

test('executor: a refused claim writes nothing', async () => {
  const { ports, log } = fakePorts({ taken: ['a.example.com'] });
  await assert.rejects(executeBind(planOf(), ports), { code: 320 });
  assert.deepEqual(log, ['claim a.example.com']);
});

test('executor: a refused join gives the claim back', async () => {
  const { ports, log } = fakePorts({ failJoin: true });
  await assert.rejects(executeBind(planOf(), ports), { code: 334 });
  assert.deepEqual(log, ['claim a.example.com', 'join https://a.example.com:8443', 'release a.example.com']);
});

test('executor: a failed insert undoes the join, then the claim, and is not served', async () => {
  const plan = planOf();
  const { ports, log, served } = fakePorts({ failInsert: true });
  await assert.rejects(executeBind(plan, ports), /disk full/);
  assert.deepEqual(log, ['claim a.example.com', 'join https://a.example.com:8443', `insert ${plan.tunnelId}`, 'close https://a.example.com:8443', 'release a.example.com']);
  assert.equal(served.length, 0);
});

test('executor: a joined endpoint lost meanwhile (settle refuses) deletes the tunnel row, then undoes the join and the claim', async () => {
  const plan = planOf();
  const { ports, log, served } = fakePorts({ failSettle: true });
  await assert.rejects(executeBind(plan, ports), (error: Error & { errorCode?: string }) => error.errorCode === 'ERR_NGROK_334');
  const url = 'https://a.example.com:8443';
  assert.deepEqual(log, ['claim a.example.com', `join ${url}`, `insert ${plan.tunnelId}`, 'settle', `delete ${plan.tunnelId}`, `close ${url}`, 'release a.example.com']);
  assert.equal(served.length, 0);
});

const token = rebindToken('hash', 'tn_old', { kind: 'hostname', hostname: 'kept.example.com' });

test('executor: a rebind gets its old target when it is free', async () => {
  const { ports, log } = fakePorts();
  const done = await executeBind(planOf({ id: 'tn_old', token, hostname: '' }), ports);
  assert.equal(done.placement.url, 'https://kept.example.com:8443');
  assert.equal(done.row.id, 'tn_old');
  assert.equal(log[0], 'claim kept.example.com');
});

test('executor: an old target taken, or served meanwhile by another tunnel, gives way to a new one', async () => {
  const taken = fakePorts({ taken: ['kept.example.com'] });
  const moved = await executeBind(planOf({ id: 'tn_old', token, hostname: '' }), taken.ports);
  assert.notEqual(moved.placement.url, 'https://kept.example.com:8443');
  assert.equal(moved.row.id, 'tn_old');
  const busy = fakePorts({ busyUrls: ['https://kept.example.com:8443'] });
  const elsewhere = await executeBind(planOf({ id: 'tn_old', token, hostname: '' }), busy.ports);
  assert.notEqual(elsewhere.placement.url, 'https://kept.example.com:8443');
  assert.deepEqual(busy.log.slice(0, 2), ['claim kept.example.com', 'release kept.example.com']);
});

test("executor: an old target taken, and the bind's own refused: the own refusal", async () => {
  const { ports } = fakePorts({ taken: ['kept.example.com'] });
  await assert.rejects(executeBind(planOf({ id: 'tn_old', token, hostname: '' }, ['bind:kept.example.com']), ports), { code: 316 });
});
