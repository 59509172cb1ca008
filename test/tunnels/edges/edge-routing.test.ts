// @test-pass sqlite
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EdgeRoute, EdgeRouteReader } from '../../../src/domain/edges/types.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EdgeRouting } from '../../../src/tunnels/edges/edge-routing.js';
import { TunnelRegistry } from '../../../src/tunnels/registry.js';

test("an edge's endpoint.url is written as public URLs are: the default port 443 left out (TUNNELS.md §1)", async () => {
  const routes: EdgeRoute[] = [
    { edgeId: 'edgtls_1', accountId: 'acct_1', hostport: 'app.example.com:443', backend: null, policy: null, tlsTermination: null },
    { edgeId: 'edgtls_2', accountId: 'acct_1', hostport: 'alt.example.com:8443', backend: null, policy: null, tlsTermination: null },
  ];
  const reader: EdgeRouteReader = { findEdgeByHost: async (host) => routes.find((route) => route.hostport.startsWith(`${host}:`)) };
  const edges = new EdgeRouting(reader, new TunnelRegistry(), 25, createLogger('silent'), 8443);
  const app = await edges.resolveEdge('app.example.com');
  assert.deepEqual(app?.endpoint, { url: 'tls://app.example.com', addr: 'app.example.com:443', host: 'app.example.com', id: 'edgtls_1', protocol: 'tls', port: 443 });
  assert.equal((await edges.resolveEdge('alt.example.com'))?.endpoint.url, 'tls://alt.example.com:8443');
});
