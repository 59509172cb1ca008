import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { replaySender } from '../../src/app/replay.js';
import type { TunnelConfig } from '../../src/config.js';
import { InspectionRecorder } from '../../src/domain/inspection/recorder.js';
import { REPLAY_HEADER } from '../../src/domain/inspection/replay.js';
import { ReplayTokens } from '../../src/domain/inspection/replay-tokens.js';
import { SqlInspectionRepository } from '../../src/storage/repositories/inspection.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * Replay across instances (CONSOLE.md §2): instance A sends the replay to its own public listener;
 * the connection is carried to instance B, which holds the agent, and B's proxy records it. Real
 * forwarding is the cluster's; here a stand-in listener plays "A's listener forwarding to B's
 * proxy" (it claims the token with B's recorder and records the exchange), on one database.
 */
let t: TestApp;
let listener: http.Server;
let carrierClaims: (string | undefined)[] = [];
let carry = true;
const secret = Buffer.alloc(32, 3);

before(async () => {
  t = await createTestApp();
  const instanceB = new InspectionRecorder(new SqlInspectionRepository(t.store), 100, () => {}, Date.now, new ReplayTokens(secret));
  listener = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const token = req.headers[REPLAY_HEADER];
      const endpointId = 'ep_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
      const id = carry && typeof token === 'string' ? instanceB.claimReplay(token, endpointId) : undefined;
      carrierClaims.push(id);
      if (id !== undefined) {
        instanceB.record(
          { id, accountId: t.admin.principal.accountId, endpointId, method: req.method!, path: req.url!, status: 200, durationMs: 1, clientIp: '127.0.0.1', requestHeaders: [], responseHeaders: [], actions: [] },
          { capture: 'heads', bodyLimitBytes: 0, redactSecrets: true },
        );
      }
      res.writeHead(carry ? 200 : 404).end();
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
});
after(async () => {
  listener.close();
  await t.close();
});

function senderOnA() {
  const instanceA = new InspectionRecorder(new SqlInspectionRepository(t.store), 100, () => {}, Date.now, new ReplayTokens(secret));
  const port = (listener.address() as AddressInfo).port;
  return replaySender(instanceA, { edgeTlsPort: 0, edgeHttpPort: port, edgeHost: '127.0.0.1' } as TunnelConfig);
}

const request = () => ({
  accountId: t.admin.principal.accountId,
  endpointId: 'ep_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns',
  url: 'http://app.example.com',
  method: 'POST',
  path: '/orders?x=1',
  headers: [['x-one', '1']] as const,
  body: Buffer.from('hello'),
});

describe('replay through an instance that did not capture the request and does not hold the agent', () => {
  it('is recorded by the instance that carries it, under the id the sender answered with', async () => {
    carrierClaims = [];
    carry = true;
    const sent = await senderOnA()(request());
    assert.ok('id' in sent, JSON.stringify(sent));
    assert.deepEqual(carrierClaims, [sent.id]);
    const row = await new SqlInspectionRepository(t.store).get(t.admin.principal.accountId, 'ep_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns', sent.id);
    assert.equal(row?.path, '/orders?x=1');
  });

  it('reaching no agent anywhere is refused, saying so (after the time a carried replay has to be listed)', async () => {
    carrierClaims = [];
    carry = false;
    const started = Date.now();
    const sent = await senderOnA()(request());
    assert.ok('refused' in sent);
    assert.match(sent.refused, /reached no agent/);
    assert.ok(Date.now() - started >= 2000);
  });
});
