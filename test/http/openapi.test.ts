import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

interface Operation {
  operationId?: string;
  security?: unknown[];
  responses: Record<string, unknown>;
  requestBody?: unknown;
}

describe('/openapi.json', () => {
  it('is an OpenAPI 3 document generated from the route schemas', async () => {
    const doc = json<{ openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } }>(
      await t.call({ method: 'GET', url: '/openapi.json', key: null, version: false }),
    );
    assert.match(doc.openapi, /^3\./);
    assert.ok(doc.components.schemas.Error);
    assert.ok(doc.components.schemas.Credential);
    assert.ok(doc.components.schemas.TLSEdge);
    assert.ok(doc.components.schemas.TrafficPolicyModule);
    assert.ok(doc.components.schemas.TunnelGroupBackend);
    assert.ok(doc.components.schemas.EndpointBackend);
    const expected: Record<string, string[]> = {
      '/credentials': ['get', 'post'],
      '/credentials/{id}': ['delete', 'get', 'patch'],
      '/edges/tls': ['get', 'post'],
      '/edges/tls/{id}': ['delete', 'get', 'patch'],
      '/edges/tls/{id}/traffic_policy': ['delete', 'get', 'put'],
      '/edges/tls/{id}/backend': ['delete', 'get', 'put'],
      '/backends/tunnel_group': ['get', 'post'],
      '/backends/tunnel_group/{id}': ['delete', 'get', 'patch'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      assert.deepEqual(Object.keys(doc.paths[path] ?? {}).sort(), methods, path);
      for (const method of methods) {
        const operation = doc.paths[path]![method]!;
        assert.ok(operation.operationId, `${method} ${path} has an operationId`);
        assert.deepEqual(operation.security, [{ bearerAuth: [] }]);
        for (const status of ['400', '401', '404', '500']) assert.ok(operation.responses[status], `${method} ${path} documents ${status}`);
      }
    }
    assert.ok(doc.paths['/credentials']!.post!.responses['201']);
    assert.ok(doc.paths['/credentials']!.post!.responses['403']);
    assert.ok(doc.paths['/credentials/{id}']!.delete!.responses['204']);
    assert.ok(doc.paths['/backends/tunnel_group/{id}']!.delete!.responses['409'], 'deleting a group in use is documented');
    // labels is a map of strings in OpenAPI 3.0 terms (additionalProperties), in bodies and answers.
    const group = doc.components.schemas.TunnelGroupBackend as { properties: Record<string, { additionalProperties?: unknown }> };
    assert.deepEqual(group.properties.labels!.additionalProperties, { type: 'string' });
    assert.ok(!doc.paths['/healthz'], 'operational endpoints are not part of the API document');
  });
});
