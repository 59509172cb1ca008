import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import { SqlEdgeRouteReader } from '../../src/storage/repositories/edge-routes.js';
import { SqlTlsEdgeRepository } from '../../src/storage/repositories/tls-edges.js';
import { SqlTunnelRepository } from '../../src/storage/repositories/tunnels.js';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

/** Tunnel group backends and the TLS edge's backend module (TUNNELS.md §4, AGENT-PROTOCOL.md §9). */

interface Ref {
  id: string;
  uri: string;
}
interface Group {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  labels: Record<string, string>;
  tunnels: Ref[];
}
interface BackendModule {
  enabled: boolean;
  backend: Ref;
}
interface Edge {
  id: string;
  backend: BackendModule | null;
  traffic_policy: unknown;
}

const BASE = 'https://api.example.com';
const GROUP_KEYS = ['id', 'uri', 'created_at', 'description', 'metadata', 'labels', 'tunnels'];
const UNKNOWN_GROUP = 'bkdtg_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
const UNKNOWN_EDGE = 'edgtls_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';

let t: TestApp;
let stranger: Caller;
let tunnels: SqlTunnelRepository;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: BASE });
  stranger = await t.newCaller({ newAccount: true });
  tunnels = new SqlTunnelRepository(t.store);
});
after(() => t.close());

async function createGroup(body: unknown, key?: string): Promise<Group> {
  const response = await t.call({ method: 'POST', url: '/backends/tunnel_group', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  return json<Group>(response);
}

async function createEdge(body: unknown = {}, key?: string): Promise<Edge> {
  const response = await t.call({ method: 'POST', url: '/edges/tls', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  return json<Edge>(response);
}

const INSTANCE = newBareId('inst');

/** A live labeled tunnel row, as the data plane writes it when an agent starts one. */
async function insertTunnel(accountId: string, labels: Record<string, string> | null): Promise<string> {
  const id = newBareId('tn');
  await tunnels.insertTunnel({
    id,
    accountId,
    sessionId: newBareId('ts'),
    instanceId: INSTANCE,
    proto: labels === null ? 'tcp' : '',
    publicUrl: labels === null ? 'tcp://1.tcp.example.net:20001' : null,
    labels,
    forwardsTo: 'localhost:80',
    metadata: '',
    startedAt: newId('tn').createdAt,
    endpointId: null,
  });
  return id;
}

const param = (error: Record<string, unknown>) => (error.details as Record<string, string>).param;

describe('POST /backends/tunnel_group', () => {
  it('answers 201 with the fields in order, labels sorted, no tunnels yet, and Location', async () => {
    const response = await t.call({
      method: 'POST',
      url: '/backends/tunnel_group',
      body: { description: 'web pool', metadata: '{"team":"infra"}', labels: { region: 'eu', app: 'web' } },
    });
    assert.equal(response.statusCode, 201, response.body);
    const group = json<Group>(response);
    assert.deepEqual(Object.keys(group), GROUP_KEYS);
    assert.match(group.id, /^bkdtg_[0-9A-Za-z]{27}$/);
    assert.equal(group.uri, `${BASE}/backends/tunnel_group/${group.id}`);
    assert.equal(response.headers.location, group.uri);
    assert.match(group.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(group.description, 'web pool');
    assert.equal(group.metadata, '{"team":"infra"}');
    assert.deepEqual(Object.entries(group.labels), [['app', 'web'], ['region', 'eu']]);
    assert.deepEqual(group.tunnels, []);
  });

  it('leaves empty description and metadata out; null means absent', async () => {
    const group = await createGroup({ labels: { a: 'b' }, description: null, metadata: '' });
    assert.deepEqual(Object.keys(group), ['id', 'uri', 'created_at', 'labels', 'tunnels']);
  });

  it('keeps every valid label key, `__proto__` included, as an ordinary key', async () => {
    const group = await createGroup(JSON.parse('{"labels":{"__proto__":"x","a.b-c_d":"' + 'v'.repeat(63) + '"}}'));
    assert.deepEqual(Object.keys(group.labels), ['__proto__', 'a.b-c_d']);
    const got = json<Group>(await t.call({ method: 'GET', url: `/backends/tunnel_group/${group.id}` }));
    assert.equal(Object.getOwnPropertyDescriptor(got.labels, '__proto__')?.value, 'x');
  });

  it('requires 1 to 10 labels: absent, null, {} and 11 are 215 naming labels', async () => {
    for (const body of [{}, { labels: null }, { labels: {} }, { labels: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v'])) }]) {
      const error = expectError(await t.call({ method: 'POST', url: '/backends/tunnel_group', body }), 400, 'ERR_NGROK_215');
      assert.equal(param(error), 'labels', JSON.stringify(body));
    }
    await createGroup({ labels: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'v'])) });
  });

  it('checks keys and values with the ACL label grammar (SPEC 5.3): 215 naming labels', async () => {
    const bad: Record<string, string>[] = [
      { 'a b': 'x' },
      { '*': 'x' },
      { a: '*' },
      { '': 'x' },
      { a: '' },
      { ['k'.repeat(64)]: 'x' },
      { a: 'v'.repeat(64) },
      { 'a=b': 'x' },
      { a: 'é' },
      { a: 'x\u0000' },
    ];
    for (const labels of bad) {
      const error = expectError(await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels } }), 400, 'ERR_NGROK_215');
      assert.equal(param(error), 'labels');
      assert.match(String(error.msg), /label (key|value)/, String(error.msg));
    }
  });

  it('refuses labels that are not a map of strings (215) and unknown fields (214)', async () => {
    for (const labels of ['env=prod', ['env=prod'], { env: 1 }, { env: null }, { env: { x: 'y' } }, true]) {
      const error = expectError(await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels } }), 400, 'ERR_NGROK_215');
      assert.equal(param(error), 'labels');
    }
    const unknown = expectError(
      await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels: { a: 'b' }, tunnels: [] } }),
      400,
      'ERR_NGROK_214',
    );
    assert.equal(param(unknown), 'tunnels');
    expectError(await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels: { a: 'b' }, id: 'x' } }), 400, 'ERR_NGROK_214');
  });

  it('limits description and metadata in bytes, with the credentials codes', async () => {
    const long = expectError(
      await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels: { a: 'b' }, description: 'é'.repeat(128) } }),
      400,
      'ERR_NGROK_604',
    );
    assert.equal(param(long), 'description');
    expectError(await t.call({ method: 'POST', url: '/backends/tunnel_group', body: { labels: { a: 'b' }, metadata: 'm'.repeat(4097) } }), 400, 'ERR_NGROK_605');
    await createGroup({ labels: { a: 'b' }, description: 'd'.repeat(255), metadata: 'm'.repeat(4096) });
  });
});

describe('GET, PATCH, DELETE /backends/tunnel_group/{id}', () => {
  it('GET returns the group as created', async () => {
    const created = await createGroup({ description: 'g', labels: { env: 'prod' } });
    const response = await t.call({ method: 'GET', url: `/backends/tunnel_group/${created.id}` });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(json(response), created);
  });

  it('PATCH changes given fields only; given labels replace them all; "" clears', async () => {
    const created = await createGroup({ description: 'before', metadata: 'm', labels: { env: 'prod', app: 'web' } });
    const url = `/backends/tunnel_group/${created.id}`;
    const described = json<Group>(await t.call({ method: 'PATCH', url, body: { id: created.id, description: 'after', labels: null } }));
    assert.equal(described.description, 'after');
    assert.equal(described.metadata, 'm');
    assert.deepEqual(described.labels, { app: 'web', env: 'prod' });
    const relabeled = json<Group>(await t.call({ method: 'PATCH', url, body: { labels: { tier: 'db' } } }));
    assert.deepEqual(relabeled.labels, { tier: 'db' });
    assert.equal(relabeled.description, 'after');
    const cleared = json<Group>(await t.call({ method: 'PATCH', url, body: { description: '', metadata: '' } }));
    assert.deepEqual(Object.keys(cleared), ['id', 'uri', 'created_at', 'labels', 'tunnels']);
    const same = await t.call({ method: 'PATCH', url, body: {} });
    assert.equal(same.statusCode, 200);
    assert.deepEqual(json(same), cleared);
  });

  it('PATCH refuses a body id other than the path id, an empty label set and bad labels; nothing changes', async () => {
    const created = await createGroup({ labels: { env: 'prod' } });
    const url = `/backends/tunnel_group/${created.id}`;
    assert.equal(param(expectError(await t.call({ method: 'PATCH', url, body: { id: UNKNOWN_GROUP, description: 'x' } }), 400, 'ERR_NGROK_215')), 'id');
    assert.equal(param(expectError(await t.call({ method: 'PATCH', url, body: { labels: {} } }), 400, 'ERR_NGROK_215')), 'labels');
    expectError(await t.call({ method: 'PATCH', url, body: { description: 'x', labels: { 'b a d': 'x' } } }), 400, 'ERR_NGROK_215');
    assert.deepEqual(json(await t.call({ method: 'GET', url })), created);
  });

  it('PATCH checks the body before the id', async () => {
    expectError(await t.call({ method: 'PATCH', url: `/backends/tunnel_group/${UNKNOWN_GROUP}`, body: { labels: {} } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/backends/tunnel_group/${UNKNOWN_GROUP}`, body: { zz: 1 } }), 400, 'ERR_NGROK_214');
  });

  it('404 generic for unknown, malformed and other-account groups, on every operation', async () => {
    const theirs = await createGroup({ labels: { env: 'prod' } }, stranger.key);
    for (const id of [UNKNOWN_GROUP, 'bkdtg_x', 'cr_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns', theirs.id]) {
      const url = `/backends/tunnel_group/${id}`;
      expectError(await t.call({ method: 'GET', url }), 404, undefined);
      expectError(await t.call({ method: 'PATCH', url, body: { description: 'x' } }), 404, undefined);
      expectError(await t.call({ method: 'DELETE', url }), 404, undefined);
    }
    // Theirs is untouched and still theirs.
    const still = await t.call({ method: 'GET', url: `/backends/tunnel_group/${theirs.id}`, key: stranger.key });
    assert.deepEqual(json(still), theirs);
  });

  it('DELETE answers 204 with no body; the group is then gone', async () => {
    const created = await createGroup({ labels: { env: 'prod' } });
    const response = await t.call({ method: 'DELETE', url: `/backends/tunnel_group/${created.id}` });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    expectError(await t.call({ method: 'GET', url: `/backends/tunnel_group/${created.id}` }), 404, undefined);
  });

  it('answers other methods with 405', async () => {
    const response = await t.call({ method: 'PUT', url: `/backends/tunnel_group/${UNKNOWN_GROUP}`, body: {} });
    expectError(response, 405, undefined);
    assert.equal(response.headers.allow, 'DELETE, GET, PATCH');
  });
});

describe('GET /backends/tunnel_group', () => {
  it('lists under backends, newest first, paged as credentials, and only the caller account', async () => {
    const other = await t.newCaller({ newAccount: true });
    const mine: string[] = [];
    for (let i = 0; i < 5; i++) mine.push((await createGroup({ labels: { i: String(i) } }, other.key)).id);
    await createGroup({ labels: { theirs: 'yes' } }, stranger.key);
    const first = await t.call({ method: 'GET', url: '/backends/tunnel_group?limit=2', key: other.key });
    assert.equal(first.statusCode, 200);
    const page = json<{ backends: Group[]; uri: string; next_page_uri: string | null }>(first);
    assert.deepEqual(Object.keys(page), ['backends', 'uri', 'next_page_uri']);
    assert.equal(page.uri, `${BASE}/backends/tunnel_group`);
    assert.deepEqual(page.backends.map((group) => group.id), [mine[4], mine[3]]);
    assert.deepEqual(Object.keys(page.backends[0]!), ['id', 'uri', 'created_at', 'labels', 'tunnels']);
    assert.equal(page.next_page_uri, `${BASE}/backends/tunnel_group?before_id=${mine[3]}&limit=2`);

    const seen: string[] = [];
    let url: string | null = '/backends/tunnel_group?limit=2';
    while (url) {
      const body: { backends: Group[]; next_page_uri: string | null } = json(await t.call({ method: 'GET', url, key: other.key }));
      seen.push(...body.backends.map((group) => group.id));
      url = body.next_page_uri && body.next_page_uri.slice(BASE.length);
    }
    assert.deepEqual(seen, [...mine].reverse());
    const camel = json<{ backends: Group[] }>(await t.call({ method: 'GET', url: `/backends/tunnel_group?beforeId=${mine[2]}`, key: other.key }));
    assert.deepEqual(camel.backends.map((group) => group.id), [mine[1], mine[0]]);
    const last = json<{ next_page_uri: unknown }>(await t.call({ method: 'GET', url: '/backends/tunnel_group?limit=5', key: other.key }));
    assert.equal(last.next_page_uri, null);
  });

  it('refuses a bad limit (244), a before_id of another kind (227) and unknown parameters (231)', async () => {
    expectError(await t.call({ method: 'GET', url: '/backends/tunnel_group?limit=0' }), 400, 'ERR_NGROK_244');
    expectError(await t.call({ method: 'GET', url: '/backends/tunnel_group?limit=101' }), 400, 'ERR_NGROK_244');
    expectError(await t.call({ method: 'GET', url: `/backends/tunnel_group?before_id=${UNKNOWN_EDGE}` }), 400, 'ERR_NGROK_227');
    expectError(await t.call({ method: 'GET', url: '/backends/tunnel_group?labels=a' }), 400, 'ERR_NGROK_231');
  });
});

describe('the tunnels of a tunnel group', () => {
  it('are the live labeled tunnels of the account whose labels include all of the group labels, oldest first', async () => {
    const caller = await t.newCaller({ newAccount: true });
    const account = caller.principal.accountId;
    const exact = await insertTunnel(account, { env: 'prod', app: 'web' });
    const superset = await insertTunnel(account, { env: 'prod', app: 'web', zone: 'a' });
    await insertTunnel(account, { env: 'prod' });
    await insertTunnel(account, { env: 'dev', app: 'web' });
    await insertTunnel(account, null);
    await insertTunnel(stranger.principal.accountId, { env: 'prod', app: 'web' });

    const group = await createGroup({ labels: { app: 'web', env: 'prod' } }, caller.key);
    assert.deepEqual(group.tunnels, [
      { id: exact, uri: `${BASE}/tunnels/${exact}` },
      { id: superset, uri: `${BASE}/tunnels/${superset}` },
    ]);
    const listed = json<{ backends: Group[] }>(await t.call({ method: 'GET', url: '/backends/tunnel_group', key: caller.key }));
    assert.deepEqual(listed.backends[0]!.tunnels, group.tunnels);

    // A tunnel that goes is no longer listed; one that comes is.
    await tunnels.deleteTunnel(exact, INSTANCE);
    const later = await insertTunnel(account, { app: 'web', env: 'prod' });
    const got = json<Group>(await t.call({ method: 'GET', url: `/backends/tunnel_group/${group.id}`, key: caller.key }));
    assert.deepEqual(got.tunnels.map((ref) => ref.id), [superset, later]);

    // Relabeling the group changes its members at once.
    const relabeled = json<Group>(
      await t.call({ method: 'PATCH', url: `/backends/tunnel_group/${group.id}`, body: { labels: { zone: 'a' } }, key: caller.key }),
    );
    assert.deepEqual(relabeled.tunnels.map((ref) => ref.id), [superset]);
  });
});

describe('the backend module of a TLS edge', () => {
  const url = (id: string) => `/edges/tls/${id}/backend`;

  it('GET is 404 while the edge has none; DELETE is 204 all the same', async () => {
    const edge = await createEdge();
    assert.equal(edge.backend, null);
    expectError(await t.call({ method: 'GET', url: url(edge.id) }), 404, undefined);
    const response = await t.call({ method: 'DELETE', url: url(edge.id) });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
  });

  it('PUT flat or wrapped stores it; GET and the edge show {enabled, backend: {id, uri}}', async () => {
    const edge = await createEdge();
    const group = await createGroup({ labels: { env: 'prod' } });
    const expected = { enabled: true, backend: { id: group.id, uri: group.uri } };

    const flat = await t.call({ method: 'PUT', url: url(edge.id), body: { backend_id: group.id } });
    assert.equal(flat.statusCode, 200, flat.body);
    assert.deepEqual(Object.keys(json(flat)), ['enabled', 'backend']);
    assert.deepEqual(json(flat), expected);
    assert.deepEqual(json(await t.call({ method: 'GET', url: url(edge.id) })), expected);
    assert.deepEqual(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).backend, expected);

    const wrapped = await t.call({ method: 'PUT', url: url(edge.id), body: { id: edge.id, module: { enabled: false, backend_id: group.id } } });
    assert.deepEqual(json(wrapped), { ...expected, enabled: false });
    const noId = await t.call({ method: 'PUT', url: url(edge.id), body: { module: { backend_id: group.id, enabled: null } } });
    assert.deepEqual(json(noId), expected, 'a wrapper without id; enabled null means true');
    assert.deepEqual(json(await t.call({ method: 'PUT', url: url(edge.id), body: { enabled: false, backend_id: group.id } })), { ...expected, enabled: false });

    const listed = json<{ tls_edges: Edge[] }>(await t.call({ method: 'GET', url: '/edges/tls' }));
    assert.deepEqual(listed.tls_edges.find((item) => item.id === edge.id)!.backend, { ...expected, enabled: false });

    assert.equal((await t.call({ method: 'DELETE', url: url(edge.id) })).statusCode, 204);
    expectError(await t.call({ method: 'GET', url: url(edge.id) }), 404, undefined);
    assert.equal(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).backend, null);
  });

  it('leaves the traffic policy module alone, and the other way round', async () => {
    const group = await createGroup({ labels: { env: 'prod' } });
    const edge = await createEdge({ traffic_policy: { value: '' } });
    await t.call({ method: 'PUT', url: url(edge.id), body: { backend_id: group.id } });
    await t.call({ method: 'DELETE', url: `/edges/tls/${edge.id}/traffic_policy` });
    await t.call({ method: 'PUT', url: `/edges/tls/${edge.id}/traffic_policy`, body: { value: 'on_tcp_connect: []' } });
    const got = json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` }));
    assert.deepEqual(got.backend, { enabled: true, backend: { id: group.id, uri: group.uri } });
    assert.deepEqual(got.traffic_policy, { enabled: true, value: 'on_tcp_connect: []' });
    await t.call({ method: 'DELETE', url: url(edge.id) });
    assert.deepEqual(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).traffic_policy, got.traffic_policy);
  });

  it('backend_id must name a tunnel group of the account: 215 naming where it was', async () => {
    const edge = await createEdge();
    const theirs = await createGroup({ labels: { env: 'prod' } }, stranger.key);
    for (const id of [UNKNOWN_GROUP, theirs.id, 'bkdtg_x', edge.id, '']) {
      const flat = expectError(await t.call({ method: 'PUT', url: url(edge.id), body: { backend_id: id } }), 400, 'ERR_NGROK_215');
      assert.equal(param(flat), 'backend_id');
      const wrapped = expectError(await t.call({ method: 'PUT', url: url(edge.id), body: { id: edge.id, module: { backend_id: id } } }), 400, 'ERR_NGROK_215');
      assert.equal(param(wrapped), 'module.backend_id');
    }
    expectError(await t.call({ method: 'GET', url: url(edge.id) }), 404, undefined);
  });

  it('refuses malformed bodies with SPEC codes', async () => {
    const edge = await createEdge();
    const group = await createGroup({ labels: { env: 'prod' } });
    const cases: [unknown, string, string][] = [
      [{}, 'ERR_NGROK_215', 'backend_id'],
      [{ enabled: true }, 'ERR_NGROK_215', 'backend_id'],
      [{ backend_id: 5 }, 'ERR_NGROK_215', 'backend_id'],
      [{ backend_id: group.id, enabled: 'yes' }, 'ERR_NGROK_215', 'enabled'],
      [{ backend_id: group.id, zz: 1 }, 'ERR_NGROK_214', 'zz'],
      [{ module: { enabled: true } }, 'ERR_NGROK_215', 'module.backend_id'],
      [{ module: { backend_id: group.id, value: '' } }, 'ERR_NGROK_214', 'module.value'],
      [{ module: 'x' }, 'ERR_NGROK_215', 'module'],
      [{ module: { backend_id: group.id }, backend_id: group.id }, 'ERR_NGROK_214', 'backend_id'],
      [{ id: UNKNOWN_EDGE, backend_id: group.id }, 'ERR_NGROK_215', 'id'],
    ];
    for (const [body, code, field] of cases) {
      const error = expectError(await t.call({ method: 'PUT', url: url(edge.id), body }), 400, code);
      assert.equal(param(error), field, JSON.stringify(body));
    }
  });

  it('404 generic for unknown, malformed and other-account edges; a bad body still wins', async () => {
    const group = await createGroup({ labels: { env: 'prod' } });
    const theirs = await createEdge({}, stranger.key);
    for (const id of [UNKNOWN_EDGE, 'edgtls_x', theirs.id]) {
      expectError(await t.call({ method: 'GET', url: url(id) }), 404, undefined);
      expectError(await t.call({ method: 'PUT', url: url(id), body: { backend_id: group.id } }), 404, undefined);
      expectError(await t.call({ method: 'DELETE', url: url(id) }), 404, undefined);
      expectError(await t.call({ method: 'PUT', url: url(id), body: { backend_id: UNKNOWN_GROUP } }), 400, 'ERR_NGROK_215');
    }
    assert.equal(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${theirs.id}`, key: stranger.key })).backend, null);
  });
});

describe('backend in TLS edge bodies', () => {
  it('create and update take {enabled, backend_id}; null means absent; a given module replaces', async () => {
    const first = await createGroup({ labels: { env: 'prod' } });
    const second = await createGroup({ labels: { env: 'dev' } });
    const edge = await createEdge({ backend: { backend_id: first.id } });
    assert.deepEqual(edge.backend, { enabled: true, backend: { id: first.id, uri: first.uri } });

    const kept = json<Edge>(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { backend: null, description: 'x' } }));
    assert.deepEqual(kept.backend, edge.backend);
    const replaced = json<Edge>(
      await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { backend: { enabled: false, backend_id: second.id } } }),
    );
    assert.deepEqual(replaced.backend, { enabled: false, backend: { id: second.id, uri: second.uri } });
    assert.deepEqual(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}/backend` })), replaced.backend);
    assert.equal((await createEdge({ backend: null })).backend, null);
  });

  it('refuses a group that is not the account own (215 naming backend.backend_id) and malformed modules', async () => {
    const theirs = await createGroup({ labels: { env: 'prod' } }, stranger.key);
    const edge = await createEdge();
    for (const id of [theirs.id, UNKNOWN_GROUP, 'x']) {
      const created = expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { backend: { backend_id: id } } }), 400, 'ERR_NGROK_215');
      assert.equal(param(created), 'backend.backend_id');
      const patched = expectError(
        await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { description: 'no', backend: { backend_id: id } } }),
        400,
        'ERR_NGROK_215',
      );
      assert.equal(param(patched), 'backend.backend_id');
    }
    assert.equal(json<Edge & { description?: string }>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).description, undefined);
    assert.equal(param(expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { backend: {} } }), 400, 'ERR_NGROK_215')), 'backend.backend_id');
    assert.equal(param(expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { backend: 'x' } }), 400, 'ERR_NGROK_215')), 'backend');
    assert.equal(
      param(expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { backend: { backend_id: theirs.id, id: 'x' } } }), 400, 'ERR_NGROK_214')),
      'backend.id',
    );
  });
});

describe('deleting a tunnel group an edge uses', () => {
  it('is refused with 409 naming the edge, until the module goes or the edge is deleted', async () => {
    const group = await createGroup({ labels: { env: 'prod' } });
    const viaPut = await createEdge();
    await t.call({ method: 'PUT', url: `/edges/tls/${viaPut.id}/backend`, body: { backend_id: group.id } });
    const viaCreate = await createEdge({ backend: { backend_id: group.id, enabled: false } });

    const refused = expectError(await t.call({ method: 'DELETE', url: `/backends/tunnel_group/${group.id}` }), 409, undefined);
    assert.match(String(refused.msg), new RegExp(`${viaPut.id}.*${viaCreate.id}|${viaCreate.id}.*${viaPut.id}`));
    assert.equal((await t.call({ method: 'GET', url: `/backends/tunnel_group/${group.id}` })).statusCode, 200);

    await t.call({ method: 'DELETE', url: `/edges/tls/${viaPut.id}/backend` });
    const stillOne = expectError(await t.call({ method: 'DELETE', url: `/backends/tunnel_group/${group.id}` }), 409, undefined);
    assert.match(String(stillOne.msg), new RegExp(viaCreate.id));
    assert.equal((await t.call({ method: 'DELETE', url: `/edges/tls/${viaCreate.id}` })).statusCode, 204);
    assert.equal((await t.call({ method: 'DELETE', url: `/backends/tunnel_group/${group.id}` })).statusCode, 204);
  });
});

describe('a group deleted between the check and the write', () => {
  it('is caught by the foreign key: the edge repository answers backend-missing, nothing is written', async () => {
    const repository = new SqlTlsEdgeRepository(t.store);
    const account = t.admin.principal.accountId;
    const edge = await createEdge();
    const gone = { enabled: true, backendId: UNKNOWN_GROUP };
    assert.equal(await repository.setBackend(account, edge.id, gone), 'backend-missing');
    assert.equal(await repository.update(account, edge.id, { description: 'x', backend: gone }), 'backend-missing');
    const { id, createdAt } = newId('edgtls');
    const fresh = { id, accountId: account, description: '', metadata: '', hostports: [], backend: gone, trafficPolicy: null, tlsTermination: null, createdAt };
    assert.equal(await repository.insert(fresh), 'backend-missing');
    assert.equal(await repository.get(account, id), undefined);
    const after = await repository.get(account, edge.id);
    assert.equal(after!.backend, null);
    assert.equal(after!.description, '');
  });
});

describe('EdgeRouteReader.findEdgeByHost (for the data plane)', () => {
  it('finds the edge by SNI host whatever the port, case-insensitively, with its backend labels and policy', async () => {
    const reader = new SqlEdgeRouteReader(t.store);
    const group = await createGroup({ labels: { env: 'prod', app: 'web' } });
    const edge = await createEdge({
      hostports: ['other.example.com:443', 'Route.Example.com:8443'],
      backend: { backend_id: group.id },
      traffic_policy: { enabled: false, value: 'on_tcp_connect: []' },
      tls_termination: { terminate_at: 'edge', min_version: '1.3' },
    });
    const route = await reader.findEdgeByHost('route.example.COM');
    assert.deepEqual(route, {
      edgeId: edge.id,
      accountId: t.admin.principal.accountId,
      hostport: 'Route.Example.com:8443',
      backend: { enabled: true, groupId: group.id, labels: { app: 'web', env: 'prod' } },
      policy: { enabled: false, value: 'on_tcp_connect: []' },
      tlsTermination: { enabled: true, terminateAt: 'edge', minVersion: '1.3' },
    });

    await t.call({ method: 'PUT', url: `/edges/tls/${edge.id}/backend`, body: { backend_id: group.id, enabled: false } });
    assert.deepEqual((await reader.findEdgeByHost('route.example.com'))!.backend, { enabled: false, groupId: group.id, labels: { app: 'web', env: 'prod' } });
    await t.call({ method: 'DELETE', url: `/edges/tls/${edge.id}/backend` });
    await t.call({ method: 'DELETE', url: `/edges/tls/${edge.id}/traffic_policy` });
    await t.call({ method: 'DELETE', url: `/edges/tls/${edge.id}/tls_termination` });
    const bare = await reader.findEdgeByHost('route.example.com');
    assert.equal(bare!.backend, null);
    assert.equal(bare!.policy, null);
    assert.equal(bare!.tlsTermination, null);

    for (const host of ['example.com', 'oute.example.com', 'route.example.co', 'route_example.com', '%', 'route.example.com:8443', '', 'x'.repeat(300)]) {
      assert.equal(await reader.findEdgeByHost(host), undefined, host);
    }
  });

  it('picks the oldest edge when several list the host, whichever account', async () => {
    const reader = new SqlEdgeRouteReader(t.store);
    const first = await createEdge({ hostports: ['shared.example.net:443'] }, stranger.key);
    await createEdge({ hostports: ['shared.example.net:443'] });
    const route = await reader.findEdgeByHost('shared.example.net');
    assert.equal(route!.edgeId, first.id);
    assert.equal(route!.accountId, stranger.principal.accountId);
  });
});
