import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

const DENY = 'on_tcp_connect:\n  - actions:\n      - type: deny\n';
const SEED_EXAMPLE = JSON.stringify({
  on_tcp_connect: [
    {
      name: 'Block some countries',
      expressions: ["conn.geo.country_code in ['XX', 'YY']"],
      actions: [{ type: 'log', config: { metadata: { country: '${conn.geo.country_code}' } } }, { type: 'deny' }],
    },
  ],
});

let t: TestApp;
let edgeId: string;
before(async () => {
  t = await createTestApp();
  edgeId = json<{ id: string }>(await t.call({ method: 'POST', url: '/edges/tls', body: {} })).id;
});
after(() => t.close());

const url = () => `/edges/tls/${edgeId}/traffic_policy`;
const put = (body: unknown) => t.call({ method: 'PUT', url: url(), body });
const get = () => t.call({ method: 'GET', url: url() });

describe('the traffic policy module', () => {
  it('GET is 404 generic while the edge has none; DELETE is 204 all the same', async () => {
    expectError(await get(), 404, undefined);
    const response = await t.call({ method: 'DELETE', url: url() });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
  });

  it('PUT with the flat module stores it; GET returns the same; the edge shows it', async () => {
    const response = await put({ enabled: true, value: SEED_EXAMPLE });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(Object.keys(json(response)), ['enabled', 'value']);
    assert.deepEqual(json(response), { enabled: true, value: SEED_EXAMPLE });
    assert.deepEqual(json(await get()), { enabled: true, value: SEED_EXAMPLE });
    assert.deepEqual(json<{ traffic_policy: unknown }>(await t.call({ method: 'GET', url: `/edges/tls/${edgeId}` })).traffic_policy, {
      enabled: true,
      value: SEED_EXAMPLE,
    });
  });

  it('PUT with the wrapped module ({"id","module"}) as the npm, Rust and Java clients send it', async () => {
    assert.deepEqual(json(await put({ id: edgeId, module: { enabled: false, value: DENY } })), { enabled: false, value: DENY });
    assert.deepEqual(json(await put({ module: { value: DENY } })), { enabled: true, value: DENY }, 'a wrapper without id');
    assert.deepEqual(json(await get()), { enabled: true, value: DENY });
  });

  it('enabled absent or null means true', async () => {
    assert.deepEqual(json(await put({ value: DENY })), { enabled: true, value: DENY });
    assert.deepEqual(json(await put({ enabled: null, value: DENY })), { enabled: true, value: DENY });
    assert.deepEqual(json(await put({ id: null, module: { enabled: null, value: DENY } })), { enabled: true, value: DENY });
  });

  it('stores the value byte for byte: comments, spacing, key order, unicode, CRLF', async () => {
    const odd = '# comment é ✓\r\non_tcp_connect:   \r\n\r\n  - name: "x"  # trailing\r\n    actions: [ {type: deny} ]\r\n';
    assert.equal(json<{ value: string }>(await put({ value: odd })).value, odd);
    assert.equal(json<{ value: string }>(await get()).value, odd);
    const spacedJson = '{ "on_tcp_connect" : [ ] ,\n\t"inbound_": 1 }'.replace(',\n\t"inbound_": 1 ', '');
    assert.equal(json<{ value: string }>(await put({ value: spacedJson })).value, spacedJson);
  });

  it('an empty document is a valid policy that does nothing', async () => {
    assert.deepEqual(json(await put({ value: '' })), { enabled: true, value: '' });
  });

  it('PUT replaces the whole module', async () => {
    await put({ enabled: false, value: DENY });
    assert.deepEqual(json(await put({ value: '' })), { enabled: true, value: '' });
  });

  it('400 ERR_NGROK_215 without value, with a non-string value, or a wrapper id of another edge', async () => {
    await put({ value: DENY });
    for (const body of [{}, { enabled: true }, { id: edgeId }, { value: 5 }, { value: null }, { module: { enabled: true } }, { enabled: 'true', value: DENY }]) {
      expectError(await put(body), 400, 'ERR_NGROK_215');
    }
    const other = json<{ id: string }>(await t.call({ method: 'POST', url: '/edges/tls', body: {} })).id;
    const mismatch = expectError(await put({ id: other, module: { value: '' } }), 400, 'ERR_NGROK_215');
    assert.equal((mismatch.details as Record<string, string>).param, 'id');
    assert.deepEqual(json(await get()), { enabled: true, value: DENY }, 'nothing changed');
    expectError(await t.call({ method: 'GET', url: `/edges/tls/${other}/traffic_policy` }), 404, undefined);
  });

  it('400 ERR_NGROK_214 for unknown keys, at the top or in the wrapped module, and flat fields next to module', async () => {
    expectError(await put({ value: DENY, name: 'x' }), 400, 'ERR_NGROK_214');
    expectError(await put({ module: { value: DENY, extra: 1 } }), 400, 'ERR_NGROK_214');
    expectError(await put({ module: { value: DENY }, value: DENY }), 400, 'ERR_NGROK_214');
  });

  it('a rejected PUT never changes the stored module', async () => {
    await put({ enabled: false, value: DENY });
    const cases: [unknown, string][] = [
      [{ value: 'on_http_request: []' }, 'ERR_NGROK_2230'],
      [{ value: 'on_tcp_connect: [' }, 'ERR_NGROK_2236'],
      [{ value: 'on_tcp_connect:\n  - expressions: ["req.url == 1"]\n    actions: [{type: deny}]' }, 'ERR_NGROK_2200'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: fly}]' }, 'ERR_NGROK_2201'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: redirect}]' }, 'ERR_NGROK_2202'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: log}]' }, 'ERR_NGROK_2204'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: deny, config: {status: 1}}]' }, 'ERR_NGROK_2203'],
      [{ value: 'on_tcp_connect:\n  - name: x' }, 'ERR_NGROK_2206'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: deny}, {type: log, config: {metadata: {}}}]' }, 'ERR_NGROK_2207'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: restrict-ips, config: {allow: ["10.0.0.0/33"]}}]' }, 'ERR_NGROK_2217'],
      [{ value: 'on_tcp_connect:\n  - actions: [{type: log, config: {metadata: {a: "${nope.x}"}}}]' }, 'ERR_NGROK_2224'],
      [{ value: `on_tcp_connect:\n${'  - actions: [{type: deny}]\n'.repeat(26)}` }, 'ERR_NGROK_2264'],
      [{ value: `# ${'x'.repeat(65536)}` }, 'ERR_NGROK_2221'],
    ];
    for (const [body, code] of cases) {
      const error = expectError(await put(body), 400, code);
      assert.equal((error.details as Record<string, string>).param, 'value');
    }
    assert.deepEqual(json(await get()), { enabled: false, value: DENY });
  });

  it('names where the document was in the request as details.param', async () => {
    const flat = expectError(await put({ value: 'on_http_request: []' }), 400, 'ERR_NGROK_2230');
    assert.equal((flat.details as Record<string, string>).param, 'value');
    const wrapped = expectError(await put({ module: { value: 'on_http_request: []' } }), 400, 'ERR_NGROK_2230');
    assert.equal((wrapped.details as Record<string, string>).param, 'module.value');
    const created = expectError(await t.call({ method: 'POST', url: '/edges/tls', body: { traffic_policy: { value: 'x: 1' } } }), 400, 'ERR_NGROK_2236');
    assert.equal((created.details as Record<string, string>).param, 'traffic_policy.value');
  });

  it('names the line of a parse error', async () => {
    const error = expectError(await put({ value: 'on_tcp_connect:\n  - actions:\n      - type: deny\n    bad: [\n' }), 400, 'ERR_NGROK_2236');
    assert.match(error.msg as string, /line \d+/);
  });

  it('honours MAX_POLICY_RULES', async () => {
    const strict = await createTestApp({ MAX_POLICY_RULES: '2' });
    try {
      const id = json<{ id: string }>(await strict.call({ method: 'POST', url: '/edges/tls', body: {} })).id;
      const three = `on_tcp_connect:\n${'  - actions: [{type: deny}]\n'.repeat(3)}`;
      expectError(await strict.call({ method: 'PUT', url: `/edges/tls/${id}/traffic_policy`, body: { value: three } }), 400, 'ERR_NGROK_2264');
      const two = `on_tcp_connect:\n${'  - actions: [{type: deny}]\n'.repeat(2)}`;
      assert.equal((await strict.call({ method: 'PUT', url: `/edges/tls/${id}/traffic_policy`, body: { value: two } })).statusCode, 200);
    } finally {
      await strict.close();
    }
  });

  it('DELETE removes the module; GET is then 404; the edge shows null', async () => {
    await put({ value: DENY });
    assert.equal((await t.call({ method: 'DELETE', url: url() })).statusCode, 204);
    expectError(await get(), 404, undefined);
    assert.equal(json<{ traffic_policy: unknown }>(await t.call({ method: 'GET', url: `/edges/tls/${edgeId}` })).traffic_policy, null);
    assert.equal((await t.call({ method: 'DELETE', url: url() })).statusCode, 204);
  });

  it('answers a wrong method with 405 and the allowed ones', async () => {
    const response = await t.call({ method: 'POST', url: url(), body: { value: '' } });
    expectError(response, 405, undefined);
    assert.equal(response.headers.allow, 'DELETE, GET, PUT');
  });

  it('checks the body before the edge: a bad body on an unknown edge gets the body error', async () => {
    const unknown = '/edges/tls/edgtls_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ/traffic_policy';
    expectError(await t.call({ method: 'PUT', url: unknown, body: { value: 'on_http_request: []' } }), 400, 'ERR_NGROK_2230');
    expectError(await t.call({ method: 'PUT', url: unknown, body: {} }), 400, 'ERR_NGROK_215');
  });
});
