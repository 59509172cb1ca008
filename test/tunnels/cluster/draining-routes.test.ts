// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EndpointPool, TunnelRegistry } from '../../../src/tunnels/registry.js';

/** CLUSTER.md §3: a draining instance sends what still reaches it to where its agents moved. */
describe('routing on a draining instance', () => {
  const url = 'http://app.burrow.localhost';

  it('prefers its own pool while serving, another instance\'s once draining', () => {
    const registry = new TunnelRegistry();
    const local = new EndpointPool(url, 'ep_local', false);
    const remote = new EndpointPool(url, 'ep_remote', false);
    registry.addPool(local);
    registry.addRemotePool(remote);
    assert.equal(registry.route(url), local);
    registry.draining = true;
    assert.equal(registry.route(url), remote);
  });

  it('keeps its own pool while draining when no other instance serves the URL', () => {
    const registry = new TunnelRegistry();
    const local = new EndpointPool(url, 'ep_local', false);
    registry.addPool(local);
    registry.draining = true;
    assert.equal(registry.route(url), local);
  });
});
