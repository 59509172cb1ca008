import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EdgeRoute, EdgeRouteReader } from '../../../src/domain/edges/types.js';
import { NO_POLICY, evaluateConnection } from '../../../src/domain/tunnels/connection-policy.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EDGE_CACHE_TTL_MS, EdgeDirectory } from '../../../src/tunnels/edges/edge-directory.js';

const DENY = '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}';

function setup(route: EdgeRoute | undefined) {
  const state = { route, lookups: 0, now: 1_000_000 };
  const reader: EdgeRouteReader = {
    async findEdgeByHost(host) {
      state.lookups++;
      return state.route && state.route.hostport.startsWith(`${host}:`) ? state.route : undefined;
    },
  };
  const directory = new EdgeDirectory(reader, 25, createLogger('silent'), () => state.now);
  return { state, directory };
}

const connection = {
  clientIp: '192.0.2.1',
  clientPort: 5000,
  serverIp: '127.0.0.1',
  serverPort: 8443,
  region: 'local',
  startedAt: 0,
  now: 0,
  endpoint: { host: 'app.example.com', port: 8443, protocol: 'tls' },
};

test('an edge resolves with its enabled backend labels and compiled policy', async () => {
  const { directory } = setup({
    edgeId: 'edgtls_1',
    accountId: 'acct_1',
    hostport: 'app.example.com:443',
    backend: { enabled: true, groupId: 'bkdtg_1', labels: { env: 'prod' } },
    policy: { enabled: true, value: DENY }, tlsTermination: null,
  });
  const edge = await directory.resolve('App.Example.com');
  assert.deepEqual(edge?.labels, { env: 'prod' });
  assert.equal(evaluateConnection(edge!.policy, connection).allowed, false);
  assert.equal(await directory.resolve('other.example.com'), undefined);
});

test('disabled modules route nowhere and apply no policy', async () => {
  const { directory } = setup({
    edgeId: 'edgtls_1',
    accountId: 'acct_1',
    hostport: 'app.example.com:443',
    backend: { enabled: false, groupId: 'bkdtg_1', labels: { env: 'prod' } },
    policy: { enabled: false, value: DENY }, tlsTermination: null,
  });
  const edge = await directory.resolve('app.example.com');
  assert.equal(edge?.labels, null);
  assert.equal(edge?.policy, NO_POLICY);
});

test('lookups are cached for at most the TTL, then a change is seen', async () => {
  const { state, directory } = setup({ edgeId: 'edgtls_1', accountId: 'acct_1', hostport: 'app.example.com:443', backend: null, policy: null, tlsTermination: null });
  await directory.resolve('app.example.com');
  await directory.resolve('app.example.com');
  assert.equal(state.lookups, 1);
  state.route = { ...state.route!, policy: { enabled: true, value: DENY } };
  state.now += EDGE_CACHE_TTL_MS + 1;
  const edge = await directory.resolve('app.example.com');
  assert.equal(state.lookups, 2);
  assert.equal(evaluateConnection(edge!.policy, connection).allowed, false);
});

test('an unknown host is cached too, and a new edge is found after the TTL', async () => {
  const { state, directory } = setup(undefined);
  assert.equal(await directory.resolve('app.example.com'), undefined);
  state.route = { edgeId: 'edgtls_1', accountId: 'acct_1', hostport: 'app.example.com:443', backend: null, policy: null, tlsTermination: null };
  assert.equal(await directory.resolve('app.example.com'), undefined);
  state.now += EDGE_CACHE_TTL_MS + 1;
  assert.equal((await directory.resolve('app.example.com'))?.edgeId, 'edgtls_1');
});

test('a stored policy that does not compile denies (fail closed)', async () => {
  const { directory } = setup({ edgeId: 'edgtls_1', accountId: 'acct_1', hostport: 'app.example.com:443', backend: null, policy: { enabled: true, value: 'not: [a policy' }, tlsTermination: null });
  const edge = await directory.resolve('app.example.com');
  assert.equal(evaluateConnection(edge!.policy, connection).allowed, false);
});
