import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { buildApp } from '../../src/app/build.js';
import { newId } from '../../src/domain/ids.js';
import type { SessionControl } from '../../src/domain/live-objects/types.js';
import type { Endpoint, SessionCommand, Tunnel, TunnelSession } from '../../src/domain/tunnels/types.js';
import { createLogger } from '../../src/observability/logger.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

/**
 * GET /tunnel_sessions, /tunnels, /endpoints and the session commands (TUNNELS.md §2–§3,
 * AGENT-PROTOCOL.md §9) over rows written the way the data plane writes them.
 */

const BASE = 'https://api.example.com';
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const INSTANCE = newId('inst').id;

const sent: { sessionId: string; command: SessionCommand }[] = [];
const control: SessionControl = {
  async send(session, command) {
    sent.push({ sessionId: session.id, command });
  },
};

let t: TestApp;
let repo: SqlTunnelRepository;
let credentialId: string;
let other: Caller;

before(async () => {
  t = await createTestApp({ PUBLIC_URL: BASE }, { sessionControl: control });
  repo = new SqlTunnelRepository(t.store);
  const created = await t.call({ method: 'POST', url: '/credentials', body: {} });
  credentialId = json<{ id: string }>(created).id;
  other = await t.newCaller({ newAccount: true });
});
after(() => t.close());
beforeEach(() => {
  sent.length = 0;
});

async function addSession(overrides: Partial<TunnelSession> = {}): Promise<TunnelSession> {
  const session: TunnelSession = {
    id: newId('ts').id,
    accountId: t.admin.principal.accountId,
    credentialId,
    instanceId: INSTANCE,
    ip: '192.0.2.7',
    metadata: '{"host":"ci-1"}',
    os: 'linux',
    agentVersion: '1.7.0',
    region: 'eu',
    startedAt: '2026-03-01T10:11:12.345Z',
    stopUnsupported: '',
    restartUnsupported: '',
    updateUnsupported: '',
    ...overrides,
  };
  await repo.insertSession(session);
  return session;
}

async function addEndpoint(session: TunnelSession, overrides: Partial<Endpoint> = {}): Promise<Endpoint> {
  // Lower-cased KSUIDs made in one second can collide (they count up in base62): use a UUID.
  const host = `${randomUUID()}.tunnels.example.com`;
  const endpoint: Endpoint = {
    id: newId('ep').id,
    accountId: session.accountId,
    instanceId: session.instanceId,
    url: `https://${host}`,
    proto: 'https',
    host,
    port: 443,
    sessionId: session.id,
    principalId: t.admin.principal.id,
    trafficPolicy: '',
    poolingEnabled: false,
    createdAt: '2026-03-01T10:11:13.500Z',
    updatedAt: '2026-03-01T10:11:13.500Z',
    ...overrides,
  };
  assert.ok(await repo.insertEndpoint(endpoint));
  return endpoint;
}

async function addTunnel(session: TunnelSession, overrides: Partial<Tunnel> = {}): Promise<Tunnel> {
  const tunnel: Tunnel = {
    id: newId('tn').id,
    accountId: session.accountId,
    sessionId: session.id,
    instanceId: session.instanceId,
    proto: 'https',
    publicUrl: null,
    labels: null,
    forwardsTo: 'http://localhost:3000',
    metadata: '',
    startedAt: '2026-03-01T10:11:14.999Z',
    endpointId: null,
    ...overrides,
  };
  await repo.insertTunnel(tunnel);
  return tunnel;
}

async function addBound(session: TunnelSession, tunnel: Partial<Tunnel> = {}, endpoint: Partial<Endpoint> = {}) {
  const ep = await addEndpoint(session, endpoint);
  const tn = await addTunnel(session, { proto: ep.proto, publicUrl: ep.url, endpointId: ep.id, ...tunnel });
  return { endpoint: ep, tunnel: tn };
}

const get = (url: string, key?: string) => t.call({ method: 'GET', url, ...(key ? { key } : {}) });
const post = (url: string, body?: unknown, key?: string) =>
  t.call({ method: 'POST', url, ...(body === undefined ? {} : { body }), ...(key ? { key } : {}) });

interface List {
  uri: string;
  next_page_uri: string | null;
  [items: string]: unknown;
}

/** Every id of a list, following next_page_uri with the given page size. */
async function walk(path: string, field: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let url: string | null = `${path}?limit=${limit}`;
  while (url !== null) {
    const body: List = json<List>(await get(url));
    const items = body[field] as { id: string }[];
    assert.ok(items.length <= limit);
    ids.push(...items.map((item) => item.id));
    url = body.next_page_uri === null ? null : body.next_page_uri.slice(BASE.length);
  }
  return ids;
}

describe('GET /tunnel_sessions', () => {
  it('shows a session in the shape of AGENT-PROTOCOL.md §9', async () => {
    const session = await addSession();
    const response = await get(`/tunnel_sessions/${session.id}`);
    assert.equal(response.statusCode, 200, response.body);
    const body = json(response);
    assert.deepEqual(Object.keys(body), ['id', 'uri', 'agent_version', 'credential', 'ip', 'metadata', 'os', 'region', 'started_at', 'transport']);
    assert.deepEqual(body, {
      id: session.id,
      uri: `${BASE}/tunnel_sessions/${session.id}`,
      agent_version: '1.7.0',
      credential: { id: credentialId, uri: `${BASE}/credentials/${credentialId}` },
      ip: '192.0.2.7',
      metadata: '{"host":"ci-1"}',
      os: 'linux',
      region: 'eu',
      started_at: '2026-03-01T10:11:12Z',
      transport: 'ngrok/2',
    });
  });

  it('leaves an empty metadata out', async () => {
    const session = await addSession({ metadata: '' });
    const body = json(await get(`/tunnel_sessions/${session.id}`));
    assert.ok(!('metadata' in body));
  });

  it('lists newest first and pages with limit and before_id like /credentials', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await addSession()).id);
    const all = json<List>(await get('/tunnel_sessions'));
    assert.deepEqual(Object.keys(all), ['tunnel_sessions', 'uri', 'next_page_uri']);
    assert.equal(all.uri, `${BASE}/tunnel_sessions`);
    assert.equal(all.next_page_uri, null);
    const listed = (all.tunnel_sessions as { id: string }[]).map((s) => s.id);
    assert.deepEqual(listed, [...listed].sort().reverse(), 'newest first');
    assert.deepEqual(listed.slice(0, 5), [...ids].reverse());

    const first = json<List>(await get('/tunnel_sessions?limit=2'));
    assert.equal(first.next_page_uri, `${BASE}/tunnel_sessions?before_id=${ids[3]}&limit=2`);
    assert.deepEqual(await walk('/tunnel_sessions', 'tunnel_sessions', 2), listed);
    assert.deepEqual(
      (json<List>(await get(`/tunnel_sessions?beforeId=${ids[2]}&limit=2`)).tunnel_sessions as { id: string }[]).map((s) => s.id),
      [ids[1], ids[0]],
    );
  });

  it('refuses a bad limit or a before_id of another kind', async () => {
    expectError(await get('/tunnel_sessions?limit=0'), 400, 'ERR_NGROK_244');
    expectError(await get('/tunnel_sessions?limit=101'), 400, 'ERR_NGROK_244');
    expectError(await get(`/tunnel_sessions?before_id=${credentialId}`), 400, 'ERR_NGROK_227');
    expectError(await get('/tunnel_sessions?before_id=ts_1&beforeId=ts_2'), 400, 'ERR_NGROK_232');
    expectError(await get('/tunnel_sessions?page=2'), 400, 'ERR_NGROK_231');
  });

  it('404 for an unknown, malformed or other-kind id', async () => {
    for (const id of [newId('ts').id, 'ts_nope', credentialId, 'x']) {
      expectError(await get(`/tunnel_sessions/${id}`), 404, undefined);
    }
  });

  it("another account sees none of them, and gets 404 for each", async () => {
    const session = await addSession();
    const listed = json<List>(await get('/tunnel_sessions', other.key));
    assert.deepEqual(listed.tunnel_sessions, []);
    expectError(await get(`/tunnel_sessions/${session.id}`, other.key), 404, undefined);
  });

  it('lists the other account its own sessions only', async () => {
    const theirs = await addSession({ accountId: other.principal.accountId });
    const listed = json<List>(await get('/tunnel_sessions', other.key));
    assert.deepEqual((listed.tunnel_sessions as { id: string }[]).map((s) => s.id), [theirs.id]);
    expectError(await get(`/tunnel_sessions/${theirs.id}`), 404, undefined);
  });

  it('needs an API key and the version header', async () => {
    expectError(await t.call({ method: 'GET', url: '/tunnel_sessions', key: null }), 401, 'ERR_NGROK_200');
    expectError(await t.call({ method: 'GET', url: '/tunnel_sessions', version: false }), 400, 'ERR_NGROK_218');
  });
});

describe('POST /tunnel_sessions/{id}/stop|restart|update', () => {
  for (const command of ['stop', 'restart', 'update'] as const) {
    it(`${command}: 204 with no body, the command sent once to the session`, async () => {
      const session = await addSession();
      const response = await post(`/tunnel_sessions/${session.id}/${command}`, {});
      assert.equal(response.statusCode, 204, response.body);
      assert.equal(response.body, '');
      assert.deepEqual(sent, [{ sessionId: session.id, command }]);
    });
  }

  it('accepts no body at all, and the path id in the body', async () => {
    const session = await addSession();
    assert.equal((await t.call({ method: 'POST', url: `/tunnel_sessions/${session.id}/restart` })).statusCode, 204);
    assert.equal((await post(`/tunnel_sessions/${session.id}/update`, { id: session.id })).statusCode, 204);
    assert.equal((await post(`/tunnel_sessions/${session.id}/stop`, { id: null })).statusCode, 204);
    assert.equal(sent.length, 3);
  });

  it('accepts the bare session id as the body (the npm client sends it so), nothing else unquoted', async () => {
    const session = await addSession();
    assert.equal((await post(`/tunnel_sessions/${session.id}/stop`, session.id)).statusCode, 204);
    expectError(await post(`/tunnel_sessions/${session.id}/stop`, newId('ts').id), 400, 'ERR_NGROK_213');
    expectError(await post(`/tunnel_sessions/${session.id}/stop`, `${session.id}x`), 400, 'ERR_NGROK_213');
    assert.deepEqual(sent, [{ sessionId: session.id, command: 'stop' }]);
  });

  it('refuses other bodies by the SPEC rules before looking the session up', async () => {
    const unknown = newId('ts').id;
    expectError(await post(`/tunnel_sessions/${unknown}/update`, { version: '3.1.0' }), 400, 'ERR_NGROK_214');
    expectError(await post(`/tunnel_sessions/${unknown}/stop`, { id: newId('ts').id }), 400, 'ERR_NGROK_215');
    expectError(await post(`/tunnel_sessions/${unknown}/stop`, { id: 7 }), 400, 'ERR_NGROK_215');
    expectError(await post(`/tunnel_sessions/${unknown}/stop`, '[]'), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: `/tunnel_sessions/${unknown}/stop`, body: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'ERR_NGROK_210');
    assert.deepEqual(sent, []);
  });

  it('400 ERR_NGROK_805/804/806 with the agent’s reason when it cannot, and nothing sent', async () => {
    const session = await addSession({
      stopUnsupported: 'the agent has not defined a callback for this operation',
      restartUnsupported: 'restarting is not supported on Windows.',
      updateUnsupported: null,
    });
    const stop = expectError(await post(`/tunnel_sessions/${session.id}/stop`), 400, 'ERR_NGROK_805');
    assert.equal(stop.msg, 'This ngrok agent does not support remote stopping: the agent has not defined a callback for this operation.');
    const restart = expectError(await post(`/tunnel_sessions/${session.id}/restart`), 400, 'ERR_NGROK_804');
    assert.equal(restart.msg, 'This ngrok agent does not support remote restarting: restarting is not supported on Windows.');
    const update = expectError(await post(`/tunnel_sessions/${session.id}/update`), 400, 'ERR_NGROK_806');
    assert.match(update.msg as string, /^This ngrok agent does not support remote updating: .+\.$/);
    assert.deepEqual(sent, []);
  });

  it("404 for an unknown or malformed id and for another account's session", async () => {
    const session = await addSession();
    for (const id of [newId('ts').id, 'ts_x', credentialId]) expectError(await post(`/tunnel_sessions/${id}/stop`), 404, undefined);
    expectError(await post(`/tunnel_sessions/${session.id}/stop`, {}, other.key), 404, undefined);
    expectError(await post(`/tunnel_sessions/${session.id}/update`, { id: session.id }, other.key), 404, undefined);
    assert.deepEqual(sent, []);
  });

  it('405 for another method on a command path', async () => {
    const session = await addSession();
    const response = await get(`/tunnel_sessions/${session.id}/stop`);
    expectError(response, 405, undefined);
    assert.equal(response.headers.allow, 'POST');
  });

  it('without a data plane to deliver it, the command is queued for the instance holding the session', async () => {
    // The app as buildApp makes it when given no SessionControl, on the same store.
    const apiOnly = await buildApp({ config: t.config, store: t.store, logger: createLogger('silent') });
    try {
      const instance = newId('inst').id;
      const session = await addSession({ instanceId: instance });
      const response = await apiOnly.inject({
        method: 'POST',
        url: `/tunnel_sessions/${session.id}/restart`,
        headers: { authorization: `Bearer ${t.admin.key}`, 'ngrok-version': '2' },
      });
      assert.equal(response.statusCode, 204, response.body);
      assert.deepEqual(await repo.takeCommands(instance), [{ sessionId: session.id, command: 'restart' }]);
      assert.deepEqual(sent, []);
    } finally {
      await apiOnly.close();
    }
  });
});

describe('GET /tunnels', () => {
  it('shows a bound tunnel with its public URL and endpoint, a labeled one with its labels', async () => {
    const session = await addSession();
    const { tunnel, endpoint } = await addBound(session, { metadata: 'web' });
    const labeled = await addTunnel(session, { proto: '', labels: { env: 'prod', Team: 'Core' }, forwardsTo: 'localhost:8080' });

    const bound = json(await get(`/tunnels/${tunnel.id}`));
    assert.deepEqual(Object.keys(bound), ['id', 'public_url', 'started_at', 'metadata', 'proto', 'region', 'tunnel_session', 'endpoint', 'forwards_to']);
    assert.deepEqual(bound, {
      id: tunnel.id,
      public_url: endpoint.url,
      started_at: '2026-03-01T10:11:14Z',
      metadata: 'web',
      proto: 'https',
      region: 'eu',
      tunnel_session: { id: session.id, uri: `${BASE}/tunnel_sessions/${session.id}` },
      endpoint: { id: endpoint.id, uri: `${BASE}/endpoints/${endpoint.id}` },
      forwards_to: 'http://localhost:3000',
    });

    const body = json(await get(`/tunnels/${labeled.id}`));
    assert.deepEqual(body, {
      id: labeled.id,
      started_at: '2026-03-01T10:11:14Z',
      region: 'eu',
      tunnel_session: { id: session.id, uri: `${BASE}/tunnel_sessions/${session.id}` },
      labels: { env: 'prod', Team: 'Core' },
      backends: [],
      forwards_to: 'localhost:8080',
    });

    const listed = json<List>(await get('/tunnels?limit=2'));
    assert.deepEqual(Object.keys(listed), ['tunnels', 'uri', 'next_page_uri']);
    assert.equal(listed.uri, `${BASE}/tunnels`);
    assert.deepEqual(listed.tunnels, [body, bound]);
  });

  it('a labeled tunnel lists the tunnel groups whose labels it carries, and only those', async () => {
    const session = await addSession();
    const labeled = await addTunnel(session, { proto: '', labels: { env: 'prod', team: 'core' }, forwardsTo: 'localhost:8080' });
    const group = async (labels: Record<string, string>) =>
      json<{ id: string }>(await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels } })).id;
    const matching = await group({ env: 'prod' });
    const exact = await group({ env: 'prod', team: 'core' });
    await group({ env: 'staging' });
    await group({ env: 'prod', team: 'core', zone: 'a' });
    const body = json<{ backends: { id: string; uri: string }[] }>(await get(`/tunnels/${labeled.id}`));
    assert.deepEqual(body.backends, [matching, exact].map((id) => ({ id, uri: `${BASE}/backends/tunnel_group/${id}` })));
  });

  it('pages newest first', async () => {
    const session = await addSession();
    for (let i = 0; i < 4; i++) await addBound(session);
    const all = (json<List>(await get('/tunnels')).tunnels as { id: string }[]).map((tn) => tn.id);
    assert.ok(all.length >= 4);
    assert.deepEqual(all, [...all].sort().reverse());
    assert.deepEqual(await walk('/tunnels', 'tunnels', 3), all);
    expectError(await get(`/tunnels?before_id=${session.id}`), 400, 'ERR_NGROK_227');
  });

  it("isolation: another account's tunnel is neither listed nor found", async () => {
    const session = await addSession({ accountId: other.principal.accountId });
    const { tunnel } = await addBound(session);
    assert.ok(!(json<List>(await get('/tunnels')).tunnels as { id: string }[]).some((tn) => tn.id === tunnel.id));
    expectError(await get(`/tunnels/${tunnel.id}`), 404, undefined);
    assert.deepEqual((json<List>(await get('/tunnels', other.key)).tunnels as { id: string }[]).map((tn) => tn.id), [tunnel.id]);
    for (const id of [newId('tn').id, 'tn_bad', session.id]) expectError(await get(`/tunnels/${id}`), 404, undefined);
  });
});

describe('GET /endpoints', () => {
  it('shows an ephemeral endpoint with the tunnel serving it, its session and principal', async () => {
    const session = await addSession();
    const policy = '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}';
    const { tunnel, endpoint } = await addBound(
      session,
      { metadata: 'db', forwardsTo: 'tcp://127.0.0.1:5432' },
      { proto: 'tcp', url: 'tcp://tunnels.example.com:20005', host: 'tunnels.example.com', port: 20005, trafficPolicy: policy, poolingEnabled: true },
    );
    // A second tunnel of the pool: the endpoint still names the first.
    await addTunnel(session, { proto: 'tcp', publicUrl: endpoint.url, endpointId: endpoint.id, metadata: 'db-2' });

    const body = json(await get(`/endpoints/${endpoint.id}`));
    assert.deepEqual(body, {
      id: endpoint.id,
      region: 'eu',
      created_at: '2026-03-01T10:11:13Z',
      updated_at: '2026-03-01T10:11:13Z',
      public_url: 'tcp://tunnels.example.com:20005',
      proto: 'tcp',
      hostport: 'tunnels.example.com:20005',
      host: 'tunnels.example.com',
      port: 20005,
      type: 'ephemeral',
      metadata: 'db',
      tunnel: { id: tunnel.id, uri: `${BASE}/tunnels/${tunnel.id}` },
      upstream_url: 'tcp://127.0.0.1:5432',
      url: 'tcp://tunnels.example.com:20005',
      principal: { id: t.admin.principal.id, uri: '' },
      traffic_policy: policy,
      bindings: ['public'],
      tunnel_session: { id: session.id, uri: `${BASE}/tunnel_sessions/${session.id}` },
      uri: `${BASE}/endpoints/${endpoint.id}`,
      pooling_enabled: true,
    });
  });

  it('leaves empty metadata and traffic policy out', async () => {
    const session = await addSession();
    const { endpoint } = await addBound(session);
    const body = json(await get(`/endpoints/${endpoint.id}`));
    assert.ok(!('metadata' in body) && !('traffic_policy' in body));
    assert.equal(body.pooling_enabled, false);
    assert.equal(body.hostport, `${endpoint.host}:443`);
  });

  it('lists and pages newest first', async () => {
    const session = await addSession();
    for (let i = 0; i < 3; i++) await addBound(session);
    const listed = json<List>(await get('/endpoints'));
    assert.deepEqual(Object.keys(listed), ['endpoints', 'uri', 'next_page_uri']);
    assert.equal(listed.uri, `${BASE}/endpoints`);
    const all = (listed.endpoints as { id: string }[]).map((ep) => ep.id);
    assert.ok(all.length >= 3);
    assert.deepEqual(all, [...all].sort().reverse());
    assert.deepEqual(await walk('/endpoints', 'endpoints', 2), all);
    expectError(await get(`/endpoints?before_id=${newId('tn').id}`), 400, 'ERR_NGROK_227');
  });

  it("isolation and malformed ids: 404", async () => {
    const session = await addSession({ accountId: other.principal.accountId });
    const { endpoint } = await addBound(session);
    expectError(await get(`/endpoints/${endpoint.id}`), 404, undefined);
    assert.ok(!(json<List>(await get('/endpoints')).endpoints as { id: string }[]).some((ep) => ep.id === endpoint.id));
    assert.equal(json(await get(`/endpoints/${endpoint.id}`, other.key)).id, endpoint.id);
    for (const id of [newId('ep').id, 'ep_', session.id]) expectError(await get(`/endpoints/${id}`), 404, undefined);
  });
});

describe('/openapi.json', () => {
  it('documents the live objects', async () => {
    const doc = json<{ paths: Record<string, Record<string, { operationId?: string; responses: Record<string, unknown> }>>; components: { schemas: Record<string, unknown> } }>(
      await t.call({ method: 'GET', url: '/openapi.json', key: null, version: false }),
    );
    for (const schema of ['TunnelSession', 'Tunnel', 'Endpoint']) assert.ok(doc.components.schemas[schema], schema);
    const expected: Record<string, string[]> = {
      '/tunnel_sessions': ['get'],
      '/tunnel_sessions/{id}': ['get'],
      '/tunnel_sessions/{id}/stop': ['post'],
      '/tunnel_sessions/{id}/restart': ['post'],
      '/tunnel_sessions/{id}/update': ['post'],
      '/tunnels': ['get'],
      '/tunnels/{id}': ['get'],
      '/endpoints': ['get'],
      '/endpoints/{id}': ['get'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      assert.deepEqual(Object.keys(doc.paths[path] ?? {}), methods, path);
      const operation = doc.paths[path]![methods[0]!]!;
      assert.ok(operation.operationId);
      for (const status of ['400', '401', '404']) assert.ok(operation.responses[status], `${path} documents ${status}`);
    }
    assert.ok(doc.paths['/tunnel_sessions/{id}/stop']!.post!.responses['204']);
  });
});
