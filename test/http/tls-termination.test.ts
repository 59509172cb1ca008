import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

interface Edge {
  id: string;
  tls_termination: Record<string, unknown> | null;
}

let t: TestApp;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
});
after(() => t.close());

async function createEdge(body: unknown = {}): Promise<Edge> {
  const response = await t.call({ method: 'POST', url: '/edges/tls', body });
  assert.equal(response.statusCode, 201, response.body);
  return json<Edge>(response);
}

const moduleUrl = (id: string) => `/edges/tls/${id}/tls_termination`;

describe('the tls_termination field of a TLS edge', () => {
  it('is created with the edge, terminate_at upstream and enabled by default', async () => {
    const edge = await createEdge({ tls_termination: {} });
    assert.deepEqual(edge.tls_termination, { enabled: true, terminate_at: 'upstream' });
    const edged = await createEdge({ tls_termination: { terminate_at: 'edge', min_version: '1.3', enabled: false } });
    assert.deepEqual(edged.tls_termination, { enabled: false, terminate_at: 'edge', min_version: '1.3' });
    const got = json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edged.id}` }));
    assert.deepEqual(got.tls_termination, edged.tls_termination);
  });

  it('refuses a bad terminate_at or min_version with 215 naming the field, creating nothing', async () => {
    const before = json<{ tls_edges: unknown[] }>(await t.call({ method: 'GET', url: '/edges/tls' })).tls_edges.length;
    const cases: [unknown, string][] = [
      [{ terminate_at: 'agent' }, 'tls_termination.terminate_at'],
      [{ terminate_at: 'edge', min_version: '1.4' }, 'tls_termination.min_version'],
      [{ terminate_at: 'edge', min_version: 'TLSv1.2' }, 'tls_termination.min_version'],
      [{ min_version: '1.2' }, 'tls_termination.min_version'],
      [{ terminate_at: 'upstream', min_version: '1.2' }, 'tls_termination.min_version'],
    ];
    for (const [module, param] of cases) {
      const error = expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { tls_termination: module } }), 400, 'ERR_NGROK_215');
      assert.equal((error.details as Record<string, string>).param, param, JSON.stringify(module));
    }
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { tls_termination: { terminate: 'edge' } } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { tls_termination: 'edge' } }), 400, 'ERR_NGROK_215');
    const now = json<{ tls_edges: unknown[] }>(await t.call({ method: 'GET', url: '/edges/tls' })).tls_edges.length;
    assert.equal(now, before);
  });

  it('PATCH replaces the whole module (min_version cleared when not given); null leaves it', async () => {
    const edge = await createEdge({ tls_termination: { terminate_at: 'edge', min_version: '1.2' } });
    const patch = (body: unknown) => t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body });
    assert.deepEqual(json<Edge>(await patch({ tls_termination: null, description: 'd' })).tls_termination, { enabled: true, terminate_at: 'edge', min_version: '1.2' });
    assert.deepEqual(json<Edge>(await patch({ tls_termination: { terminate_at: 'edge' } })).tls_termination, { enabled: true, terminate_at: 'edge' });
    assert.deepEqual(json<Edge>(await patch({ tls_termination: { terminate_at: 'edge', min_version: '1.3' } })).tls_termination, { enabled: true, terminate_at: 'edge', min_version: '1.3' });
    expectError(await patch({ tls_termination: { terminate_at: 'nowhere' } }), 400, 'ERR_NGROK_215');
    const got = json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` }));
    assert.deepEqual(got.tls_termination, { enabled: true, terminate_at: 'edge', min_version: '1.3' });
  });
});

describe('/edges/tls/{id}/tls_termination', () => {
  it('PUT flat or wrapped, GET, DELETE (also when absent)', async () => {
    const edge = await createEdge();
    expectError(await t.call({ method: 'GET', url: moduleUrl(edge.id) }), 404, undefined);
    const flat = await t.call({ method: 'PUT', url: moduleUrl(edge.id), body: { terminate_at: 'edge', min_version: '1.2' } });
    assert.equal(flat.statusCode, 200, flat.body);
    assert.deepEqual(json(flat), { enabled: true, terminate_at: 'edge', min_version: '1.2' });
    const wrapped = await t.call({ method: 'PUT', url: moduleUrl(edge.id), body: { id: edge.id, module: { enabled: false, terminate_at: 'upstream' } } });
    assert.deepEqual(json(wrapped), { enabled: false, terminate_at: 'upstream' });
    assert.deepEqual(json(await t.call({ method: 'GET', url: moduleUrl(edge.id) })), { enabled: false, terminate_at: 'upstream' });
    assert.deepEqual(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).tls_termination, { enabled: false, terminate_at: 'upstream' });
    assert.equal((await t.call({ method: 'DELETE', url: moduleUrl(edge.id) })).statusCode, 204);
    assert.equal((await t.call({ method: 'DELETE', url: moduleUrl(edge.id) })).statusCode, 204);
    expectError(await t.call({ method: 'GET', url: moduleUrl(edge.id) }), 404, undefined);
    assert.equal(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).tls_termination, null);
  });

  it('refuses a bad module, a mixed body or a mismatched id, and keeps the stored module', async () => {
    const edge = await createEdge({ tls_termination: { terminate_at: 'edge' } });
    const put = (body: unknown) => t.call({ method: 'PUT', url: moduleUrl(edge.id), body });
    let error = expectError(await put({ terminate_at: 'middle' }), 400, 'ERR_NGROK_215');
    assert.equal((error.details as Record<string, string>).param, 'terminate_at');
    error = expectError(await put({ module: { terminate_at: 'edge', min_version: '2' } }), 400, 'ERR_NGROK_215');
    assert.equal((error.details as Record<string, string>).param, 'module.min_version');
    expectError(await put({ module: { terminate_at: 'edge' }, min_version: '1.2' }), 400, 'ERR_NGROK_214');
    expectError(await put({ id: 'edgtls_other', module: { terminate_at: 'edge' } }), 400, 'ERR_NGROK_215');
    expectError(await put({ extra: 1 }), 400, 'ERR_NGROK_214');
    assert.deepEqual(json(await t.call({ method: 'GET', url: moduleUrl(edge.id) })), { enabled: true, terminate_at: 'edge' });
  });

  it('404 for an unknown or another account\'s edge', async () => {
    const edge = await createEdge();
    const other = await t.newCaller({ newAccount: true });
    for (const method of ['PUT', 'GET', 'DELETE'] as const) {
      const body = method === 'PUT' ? { terminate_at: 'edge' } : undefined;
      expectError(await t.call({ method, url: moduleUrl('edgtls_2ZZZZZZZZZZZZZZZZZZZZZZZZZZ'), body }), 404, undefined);
      expectError(await t.call({ method, url: moduleUrl(edge.id), body, key: other.key }), 404, undefined);
    }
    assert.equal(json<Edge>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}` })).tls_termination, null);
  });

  it('is in /openapi.json with its three operations', async () => {
    const doc = json<{ paths: Record<string, Record<string, { operationId: string }>> }>(await t.call({ method: 'GET', url: '/openapi.json' }));
    const path = doc.paths['/edges/tls/{id}/tls_termination'];
    assert.ok(path, Object.keys(doc.paths).join(' '));
    assert.deepEqual(Object.keys(path).sort(), ['delete', 'get', 'put']);
  });
});
