import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

interface Module {
  enabled: boolean;
  value: string;
}
interface Edge {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  hostports: string[];
  traffic_policy: Module | null;
  [module: string]: unknown;
}

const DENY = 'on_tcp_connect:\n  - name: block\n    actions:\n      - type: deny\n';

let t: TestApp;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
});
after(() => t.close());

async function createEdge(body: unknown = {}, key?: string): Promise<Edge> {
  const response = await t.call({ method: 'POST', url: '/edges/tls', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  return json<Edge>(response);
}

describe('POST /edges/tls', () => {
  it('answers 201 with the SPEC 7.1 fields in order, nulls for unserved modules, and Location', async () => {
    const response = await t.call({
      method: 'POST',
      url: '/edges/tls',
      body: { description: 'edge', metadata: 'm', hostports: ['app.example.com:443', '10.0.0.7:8443'] },
    });
    assert.equal(response.statusCode, 201);
    const edge = json<Edge>(response);
    assert.deepEqual(Object.keys(edge), [
      'id', 'uri', 'created_at', 'description', 'metadata', 'hostports', 'backend', 'ip_restriction', 'mutual_tls', 'tls_termination', 'traffic_policy', 'policy',
    ]);
    assert.match(edge.id, /^edgtls_[0-9A-Za-z]{27}$/);
    assert.equal(edge.uri, `https://api.example.com/edges/tls/${edge.id}`);
    assert.equal(response.headers.location, edge.uri);
    assert.deepEqual(edge.hostports, ['app.example.com:443', '10.0.0.7:8443']);
    for (const module of ['backend', 'ip_restriction', 'mutual_tls', 'tls_termination', 'traffic_policy', 'policy']) assert.equal(edge[module], null);
  });

  it('with an empty body: hostports [] and no description or metadata', async () => {
    const edge = await createEdge();
    assert.deepEqual(edge.hostports, []);
    assert.ok(!('description' in edge) && !('metadata' in edge));
  });

  it('accepts null for every unserved module, and refuses any other value with 215', async () => {
    await createEdge({ backend: null, ip_restriction: null, mutual_tls: null, tls_termination: null, policy: null, traffic_policy: null });
    // `backend` and `tls_termination` are served now: test/http/tunnel-group-backends.test.ts, tls-termination.test.ts.
    for (const module of ['ip_restriction', 'mutual_tls', 'policy']) {
      for (const value of [{}, { id: 'bkdbg_x' }, 'x', false]) {
        const response = await t.call({ method: 'POST', url: '/edges/tls', body: { [module]: value } });
        const error = expectError(response, 400, 'ERR_NGROK_215');
        assert.equal((error.details as Record<string, string>).param, module);
        assert.match(error.msg as string, /does not serve/);
      }
    }
  });

  it('creates the traffic policy module with the edge, enabled by default', async () => {
    const edge = await createEdge({ traffic_policy: { value: DENY } });
    assert.deepEqual(edge.traffic_policy, { enabled: true, value: DENY });
    const off = await createEdge({ traffic_policy: { enabled: false, value: DENY } });
    assert.deepEqual(off.traffic_policy, { enabled: false, value: DENY });
    const nullEnabled = await createEdge({ traffic_policy: { enabled: null, value: '' } });
    assert.deepEqual(nullEnabled.traffic_policy, { enabled: true, value: '' });
  });

  it('validates the module in a body: value required (215), other keys unknown (214), policy rules', async () => {
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: {} } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { enabled: true } } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { value: 5 } } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { enabled: 'yes', value: '' } } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { module: { value: DENY } } } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: 'on_tcp_connect: []' } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { value: 'on_http_request: []' } } }), 400, 'ERR_NGROK_2230');
    const before = json<{ tls_edges: unknown[] }>(await t.call({ method: 'GET', url: '/edges/tls' })).tls_edges.length;
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { description: 'x', traffic_policy: { value: 'nope: 1' } } }), 400, 'ERR_NGROK_2236');
    assert.equal(json<{ tls_edges: unknown[] }>(await t.call({ method: 'GET', url: '/edges/tls' })).tls_edges.length, before, 'nothing created');
  });

  it('limits description and metadata in bytes like credentials', async () => {
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { description: 'é'.repeat(128) } }), 400, 'ERR_NGROK_604');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { metadata: 'x'.repeat(4097) } }), 400, 'ERR_NGROK_605');
  });

  it('accepts up to 10 valid hostports and refuses more, or a bad one, with 215', async () => {
    const ten = Array.from({ length: 10 }, (_, i) => `h${i}.example.com:${443 + i}`);
    assert.deepEqual((await createEdge({ hostports: ten })).hostports, ten);
    const refused = [
      [...ten, 'h10.example.com:1'],
      ['example.com'],
      ['example.com:0'],
      ['example.com:65536'],
      ['example.com:080'],
      ['localhost:80'],
      ['256.1.1.1:80'],
      ['*.example.com:443'],
      ['a b.example.com:1'],
      [''],
      [5],
      'app.example.com:443',
    ];
    for (const hostports of refused) {
      const response = await t.call({ method: 'POST', url: '/edges/tls', body: { hostports } });
      const error = expectError(response, 400, 'ERR_NGROK_215');
      assert.equal((error.details as Record<string, string>).param, 'hostports');
    }
  });

  it('explains a bad hostport in terms of hostports, not ACL rules', async () => {
    for (const [hostport, expected] of [
      [' a.example.com:1', /hostports must not contain whitespace/],
      ['*.example.com:443', /hostport names one host/],
    ] as const) {
      const error = expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { hostports: [hostport] } }), 400, 'ERR_NGROK_215');
      assert.match(String(error.msg), expected);
      assert.doesNotMatch(String(error.msg), /rule|bind:/);
    }
  });
});

describe('GET, PATCH, DELETE /edges/tls/{id}', () => {
  it('GET returns the edge as created', async () => {
    const edge = await createEdge({ description: 'd', hostports: ['a.example.com:443'], traffic_policy: { value: DENY } });
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })), edge);
  });

  it('404 generic for unknown, malformed and other-account edges, on every operation', async () => {
    const stranger: Caller = await t.newCaller({ newAccount: true });
    const theirs = await createEdge({ traffic_policy: { value: DENY } }, stranger.key);
    const ids = ['edgtls_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'edgtls_x', 'cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', theirs.id];
    for (const id of ids) {
      expectError(await t.call({ method: 'GET', url: `/edges/tls/${id}` }), 404, undefined);
      expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${id}`, body: { description: 'x' } }), 404, undefined);
      expectError(await t.call({ method: 'DELETE', url: `/edges/tls/${id}` }), 404, undefined);
      expectError(await t.call({ method: 'GET', url: `/edges/tls/${id}/traffic_policy` }), 404, undefined);
      expectError(await t.call({ method: 'PUT', url: `/edges/tls/${id}/traffic_policy`, body: { value: DENY } }), 404, undefined);
      expectError(await t.call({ method: 'DELETE', url: `/edges/tls/${id}/traffic_policy` }), 404, undefined);
    }
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/edges/tls/${theirs.id}`, key: stranger.key })), theirs, 'untouched');
  });

  it('PATCH changes given fields only, "" clears, [] clears hostports', async () => {
    const edge = await createEdge({ description: 'd', metadata: 'm', hostports: ['a.example.com:443'], traffic_policy: { value: DENY } });
    const patched = json<Edge>(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { description: 'new', metadata: null, backend: null } }));
    assert.deepEqual(patched, { ...edge, description: 'new' });
    const cleared = json<Edge>(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { description: '', metadata: '', hostports: [] } }));
    assert.ok(!('description' in cleared) && !('metadata' in cleared));
    assert.deepEqual(cleared.hostports, []);
    assert.deepEqual(cleared.traffic_policy, { enabled: true, value: DENY }, 'an absent traffic_policy leaves the module');
  });

  it('PATCH with traffic_policy replaces the module; null leaves it', async () => {
    const edge = await createEdge({ traffic_policy: { value: DENY } });
    const replaced = json<Edge>(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { traffic_policy: { enabled: false, value: '' } } }));
    assert.deepEqual(replaced.traffic_policy, { enabled: false, value: '' });
    const kept = json<Edge>(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { traffic_policy: null } }));
    assert.deepEqual(kept.traffic_policy, { enabled: false, value: '' });
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}/traffic_policy` })), { enabled: false, value: '' });
  });

  it('PATCH: id in the body must equal the path id; a rejected PATCH changes nothing', async () => {
    const edge = await createEdge({ description: 'orig', traffic_policy: { value: DENY } });
    const ok = await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { id: edge.id } });
    assert.equal(ok.statusCode, 200);
    expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { id: 'edgtls_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', description: 'x' } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { description: 'x', traffic_policy: { value: 'on_tcp_connect: 5' } } }), 400, 'ERR_NGROK_2236');
    expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { description: 'x', hostports: ['nope'] } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { description: 'x', mutual_tls: { enabled: true } } }), 400, 'ERR_NGROK_215');
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })), edge);
  });

  it('PATCH checks the body before the id', async () => {
    const unknown = 'edgtls_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ';
    expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${unknown}`, body: { hostports: ['x'] } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/edges/tls/${unknown}`, body: { traffic_policy: { value: 'on_http_response: []' } } }), 400, 'ERR_NGROK_2230');
  });

  it('DELETE answers 204 and removes the module with the edge', async () => {
    const edge = await createEdge({ traffic_policy: { value: DENY } });
    const response = await t.call({ method: 'DELETE', url: `/edges/tls/${edge.id}` });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    expectError(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}/traffic_policy` }), 404, undefined);
  });
});

describe('GET /edges/tls', () => {
  it('lists under tls_edges, newest first, with the same pagination as credentials', async () => {
    const lister = await t.newCaller({ newAccount: true });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createEdge({}, lister.key)).id);
    ids.reverse();
    const list = (query: string) => t.call({ method: 'GET', url: `/edges/tls${query}`, key: lister.key });
    const first = json<{ tls_edges: Edge[]; uri: string; next_page_uri: string }>(await list('?limit=2'));
    assert.deepEqual(Object.keys(first), ['tls_edges', 'uri', 'next_page_uri']);
    assert.deepEqual(first.tls_edges.map((e) => e.id), ids.slice(0, 2));
    assert.equal(first.uri, 'https://api.example.com/edges/tls');
    assert.equal(first.next_page_uri, `https://api.example.com/edges/tls?before_id=${ids[1]}&limit=2`);
    const rest = json<{ tls_edges: Edge[]; next_page_uri: null }>(await list(`?beforeId=${ids[1]}`));
    assert.deepEqual(rest.tls_edges.map((e) => e.id), ids.slice(2));
    assert.equal(rest.next_page_uri, null);
    expectError(await list('?limit=0'), 400, 'ERR_NGROK_244');
    expectError(await list('?before_id=cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ'), 400, 'ERR_NGROK_227');
    expectError(await list('?sort=asc'), 400, 'ERR_NGROK_231');
    expectError(await list(`?before_id=${ids[0]}&beforeId=${ids[1]}`), 400, 'ERR_NGROK_232');
  });
});
