import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import { SqlRemoteRouteSource } from '../../src/storage/repositories/remote-routes.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * A policy patch moves the route's version that other instances' routing caches compare
 * (CLUSTER.md §2, migration 023): every patch, two in the same millisecond and concurrent ones
 * included, on the store of the pass.
 */
let t: TestApp;
let repo: SqlTunnelRepository;

before(async () => {
  t = await createTestApp();
  repo = new SqlTunnelRepository(t.store);
});
after(() => t.close());

/** An endpoint held by an instance with a cluster address, with one tunnel; its id and how to read its route's version from another instance. */
async function heldEndpoint(host: string) {
  const [holder, reader, accountId] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
  await repo.beat(holder, new Date().toISOString(), Date.now(), '127.0.1.1:7000');
  const now = '2026-11-28T12:00:00.000Z';
  const endpoint = { id: newId('ep').id, accountId, instanceId: holder, url: `https://${host}`, proto: 'https' as const, host, port: 443, sessionId: newBareId('ts'), principalId: newBareId('usr'), trafficPolicy: '', poolingEnabled: false, createdAt: now, updatedAt: now };
  assert.ok(await repo.insertEndpoint(endpoint));
  const tunnelId = newId('tn').id;
  await repo.insertTunnel({ id: tunnelId, accountId, sessionId: endpoint.sessionId, instanceId: holder, proto: 'https', publicUrl: endpoint.url, labels: null, forwardsTo: 'f', metadata: '', startedAt: now, endpointId: endpoint.id });
  const source = new SqlRemoteRouteSource(t.store);
  const version = async () => {
    const route = (await source.tunnelsElsewhere(reader)).find((candidate) => candidate.tunnelId === tunnelId);
    assert.ok(route, 'the route is listed');
    return route.version;
  };
  const counter = async () => (await t.store.db.selectFrom('endpoints').select('policy_version').where('id', '=', endpoint.id).executeTakeFirstOrThrow()).policy_version;
  return { endpoint, version, counter };
}

describe('the policy version of an endpoint', () => {
  it('changes at each patch, two written in the same millisecond included', async () => {
    const { endpoint, version, counter } = await heldEndpoint('patched.example.com');
    const seen = [await version()];
    const sameMs = '2026-11-28T12:00:01.000Z';
    await repo.updateEndpointPolicy(endpoint.id, '{"on_http_request":[]}', sameMs);
    seen.push(await version());
    await repo.updateEndpointPolicy(endpoint.id, '{"on_http_response":[]}', sameMs);
    seen.push(await version());
    assert.equal(new Set(seen).size, 3, `versions ${seen.join(', ')}`);
    assert.equal(Number(await counter()), 2);
  });

  it('counts every one of concurrent patches', async () => {
    const { endpoint, counter } = await heldEndpoint('concurrent.example.com');
    await Promise.all(Array.from({ length: 5 }, (_, i) => repo.updateEndpointPolicy(endpoint.id, `{"on_http_request":[],"n":${i}}`, new Date().toISOString())));
    assert.equal(Number(await counter()), 5);
  });
});
