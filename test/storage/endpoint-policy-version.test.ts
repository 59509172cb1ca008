import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import { SqlRemoteRouteSource } from '../../src/storage/repositories/remote-routes.js';
import { endpointOf, tunnelTables } from '../helpers/tunnel-tables.js';

/**
 * A policy patch moves the route's version that other instances' routing caches compare
 * (CLUSTER.md §2, migration 023): every patch, two in the same millisecond and concurrent ones
 * included, on the store of the pass.
 */
const tables = tunnelTables();

/** An endpoint held by an instance with a cluster address, with one tunnel; its id and how to read its route's version from another instance. */
async function heldEndpoint(host: string) {
  const [holder, reader, accountId] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
  const repo = tables.repo;
  await repo.beat(holder, new Date().toISOString(), Date.now(), '127.0.1.1:7000');
  const endpoint = endpointOf(holder, accountId, host);
  assert.ok(await repo.insertEndpoint(endpoint));
  const tunnelId = newId('tn').id;
  await repo.insertTunnel({ id: tunnelId, accountId, sessionId: endpoint.sessionId, instanceId: holder, proto: 'https', publicUrl: endpoint.url, labels: null, forwardsTo: 'f', metadata: '', startedAt: endpoint.createdAt, endpointId: endpoint.id });
  const source = new SqlRemoteRouteSource(tables.store);
  const version = async () => {
    const route = (await source.tunnelsElsewhere(reader)).find((candidate) => candidate.tunnelId === tunnelId);
    assert.ok(route, 'the route is listed');
    return route.version;
  };
  const counter = async () => (await tables.store.db.selectFrom('endpoints').select('policy_version').where('id', '=', endpoint.id).executeTakeFirstOrThrow()).policy_version;
  return { endpoint, version, counter };
}

describe('the policy version of an endpoint', () => {
  it('changes at each patch, two written in the same millisecond included', async () => {
    const { endpoint, version, counter } = await heldEndpoint('patched.example.com');
    const seen = [await version()];
    const sameMs = '2026-11-28T12:00:01.000Z';
    await tables.repo.updateEndpointPolicy(endpoint.id, '{"on_http_request":[]}', sameMs);
    seen.push(await version());
    await tables.repo.updateEndpointPolicy(endpoint.id, '{"on_http_response":[]}', sameMs);
    seen.push(await version());
    assert.equal(new Set(seen).size, 3, `versions ${seen.join(', ')}`);
    assert.equal(Number(await counter()), 2);
  });

  it('counts every one of concurrent patches', async () => {
    const { endpoint, counter } = await heldEndpoint('concurrent.example.com');
    await Promise.all(Array.from({ length: 5 }, (_, i) => tables.repo.updateEndpointPolicy(endpoint.id, `{"on_http_request":[],"n":${i}}`, new Date().toISOString())));
    assert.equal(Number(await counter()), 5);
  });
});
