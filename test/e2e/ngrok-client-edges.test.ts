import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ngrok, type TLSEdge, type TLSEdgeCreate, type TLSEdgeUpdate } from '@ngrok/ngrok-api';
import { apiError, rejection, within } from '../helpers/ngrok-client.js';
import { cleanupProcesses, startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * TLS edges and their traffic policy module (SPEC §7) through the official npm client
 * (@ngrok/ngrok-api 0.11.0), used as a user would against a real `burrow serve` process with only
 * its base URL changed.
 *
 * 0.11.0 knows TLS edges (`ngrok.edges.edgesTls`) but has no traffic policy module class and no
 * `trafficPolicy` field in its datatypes, so the module endpoints and a create that carries a module
 * go through the client's own HTTP client (a wretch 1.x instance with its base URL, API key,
 * `Ngrok-Version: 2` and JSON content type), with the wrapped body `{id, module}` that the client's
 * newer releases send.
 */

const EDGE_ID = /^edgtls_[0-9A-Za-z]{27}$/;
const OPERATION_ID = /^op_[0-9A-Za-z]{27}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
/** A well-formed edge id that no edge has. */
const UNKNOWN_EDGE = 'edgtls_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';

/** The wire fields of SPEC §7.1 in order, as the client camel-cases them. */
const EDGE_KEYS = [
  'id',
  'uri',
  'createdAt',
  'description',
  'metadata',
  'hostports',
  'backend',
  'ipRestriction',
  'mutualTls',
  'tlsTermination',
  'trafficPolicy',
  'policy',
];

/**
 * A valid on_tcp_connect policy whose bytes a re-serialisation, trimming or newline normalisation
 * would change: a leading blank line, comments (one with a tab before it), CRLF line ends,
 * trailing spaces, odd indentation and spacing, a flow mapping, non-ASCII text, and no final
 * newline but trailing spaces.
 */
const ODD_POLICY =
  '  \r\n' +
  '# burrow e2e: comments, odd spacing and non-ASCII survive\r\n' +
  'on_tcp_connect:   # the TLS phase\r\n' +
  '\r\n' +
  '    -   name:    "Lärm — block"   \r\n' +
  '        expressions:\r\n' +
  '          - "conn.client_port  >  1024"\t# tab before\r\n' +
  '        actions:\r\n' +
  '          -  type:   log\r\n' +
  '             config:\r\n' +
  '               metadata: { port: "${conn.client_port}" ,  why : \'odd  spacing\' }\r\n' +
  '          - type: deny\r\n' +
  '# trailing comment, no final newline  ';

const DENY_ALL = 'on_tcp_connect:\n  - name: deny everyone\n    actions:\n      - type: deny\n';
/** Valid YAML with a phase a TLS edge lacks: ERR_NGROK_2230. */
const HTTP_PHASE_POLICY = 'on_http_request:\n  - actions:\n      - type: deny\n';


/** The traffic policy module on the wire. */
interface Module {
  enabled: boolean;
  value: string;
}

/** The part of wretch 1.x's API used here (the client keeps its instance in a private field). */
interface HttpResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}
interface ResponseChain {
  json(): Promise<unknown>;
  res(): Promise<HttpResponse>;
}
interface HttpClient {
  url(path: string): HttpClient;
  get(): ResponseChain;
  post(body: string): ResponseChain;
  put(body: string): ResponseChain;
  patch(body: string): ResponseChain;
  delete(): ResponseChain;
}

/** What wretch 1.x rejects with on a non-2xx answer: an Error carrying the status and body text. */
interface HttpError extends Error {
  status: number;
  text: string;
}

/** The JSON error body of SPEC §3. */
interface ErrorBody {
  error_code?: string;
  status_code: number;
  msg: string;
  details: Record<string, unknown>;
}

let server: ServerProcess;
let ngrok: Ngrok;
let http: HttpClient;
/** Every edge this file created and has not deleted: the account's whole list. */
const live = new Set<string>();

before(async () => {
  server = await startServer();
  ngrok = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
  http = (ngrok as unknown as { httpClient: HttpClient }).httpClient;
});

after(cleanupProcesses);



/** Checks a rejection of the raw HTTP client: the status, and the JSON error body of SPEC §3. */
function httpError(reason: unknown, status: number): ErrorBody {
  assert.ok(reason instanceof Error, `expected wretch's Error, got ${String(reason)}`);
  const error = reason as HttpError;
  assert.equal(error.status, status, `status ${error.status}: ${error.text}`);
  assert.equal(typeof error.text, 'string');
  const body = JSON.parse(error.text) as ErrorBody;
  assert.equal(body.status_code, status);
  assert.equal(typeof body.msg, 'string');
  assert.ok(body.msg.length > 0);
  assert.match(String(body.details.operation_id), OPERATION_ID);
  for (const value of Object.values(body.details)) assert.equal(typeof value, 'string');
  return body;
}

/** The generic not-found answer (SPEC §3): exact message, no error_code. */
function assertNotFound(body: ErrorBody): void {
  assert.equal(body.msg, 'Resource not found');
  assert.equal(body.error_code, undefined, 'not found carries no error_code');
}


/** The module as the client reads it from an edge (0.11.0's TLSEdge type has no such field). */
function moduleOf(edge: TLSEdge): unknown {
  assert.ok('trafficPolicy' in edge, 'the edge must carry traffic_policy, null when there is no module');
  return (edge as TLSEdge & { trafficPolicy: unknown }).trafficPolicy;
}

async function createEdge(arg: TLSEdgeCreate): Promise<TLSEdge> {
  const edge = await ngrok.edges.edgesTls.create(arg);
  live.add(edge.id);
  return edge;
}

/** 0.11.0's delete() rejects with the SyntaxError of parsing the empty 204 body; that is success. */
async function deleteEdge(id: string): Promise<void> {
  let outcome: unknown = 'resolved';
  try {
    await ngrok.edges.edgesTls.delete(id);
  } catch (error) {
    outcome = error;
  }
  assert.ok(outcome === 'resolved' || outcome instanceof SyntaxError, `delete failed: ${JSON.stringify(outcome)}`);
  live.delete(id);
}

const policyPath = (id: string) => `/edges/tls/${id}/traffic_policy`;

/** PUT with the wrapped body of the client's newer releases; `enabled` left out when undefined. */
function putModule(id: string, module: { enabled?: boolean; value: string }): Promise<unknown> {
  return http.url(policyPath(id)).put(JSON.stringify({ id, module })).json();
}

function getModule(id: string): Promise<unknown> {
  return http.url(policyPath(id)).get().json();
}

describe('@ngrok/ngrok-api 0.11.0 TLS edges against a burrow process', () => {
  it('creates an edge with description, metadata and hostports; unserved modules come back null', async () => {
    const edge = await createEdge({
      description: 'edge of ada',
      metadata: '{"team":"infra"}',
      hostports: ['app.example.com:443', '10.0.0.7:8443'],
    });
    assert.match(edge.id, EDGE_ID);
    assert.equal(edge.uri, `${server.baseUrl}/edges/tls/${edge.id}`);
    // Typed as a Date by the client, but it passes the JSON string through unchanged.
    assert.match(String(edge.createdAt), TIMESTAMP);
    assert.equal(edge.description, 'edge of ada');
    assert.equal(edge.metadata, '{"team":"infra"}');
    assert.deepEqual(edge.hostports, ['app.example.com:443', '10.0.0.7:8443']);
    // Every field of SPEC §7.1, in order, the modules present as null (not left out).
    assert.deepEqual(Object.keys(edge), EDGE_KEYS);
    assert.equal(edge.backend, null);
    assert.equal(edge.ipRestriction, null);
    assert.equal(edge.mutualTls, null);
    assert.equal(edge.tlsTermination, null);
    assert.equal(edge.policy, null);
    assert.equal(moduleOf(edge), null);
  });

  it('creates with an empty argument: no description or metadata, hostports []', async () => {
    const edge = await createEdge({});
    assert.match(edge.id, EDGE_ID);
    assert.equal(edge.description, undefined);
    assert.equal(edge.metadata, undefined);
    assert.deepEqual(edge.hostports, []);
    assert.equal(moduleOf(edge), null);
  });

  it('gets an edge exactly as it was created', async () => {
    const created = await createEdge({ description: 'to get', hostports: ['get.example.com:443'] });
    const got = await ngrok.edges.edgesTls.get(created.id);
    assert.deepEqual({ ...got }, { ...created });
  });

  it('lists across several pages: every edge once, newest first, and stops', async () => {
    for (let i = 0; i < 5; i++) await createEdge({ description: `page item ${i}` });
    assert.ok(live.size >= 8, 'enough edges for several pages');
    const before = server.logs().length;
    // The client pages by sending `beforeId` (camel case) with the last id of each page; a server
    // that ignored it would hand out the first page forever.
    const listed = await within(10_000, ngrok.edges.edgesTls.list(undefined, '2'), 'edgesTls.list');
    const ids = listed.map((edge) => edge.id);
    assert.equal(new Set(ids).size, ids.length, 'no edge may be listed twice');
    assert.deepEqual(new Set(ids), live, 'the list must hold exactly the live edges');
    assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');
    for (const edge of listed) {
      assert.deepEqual(Object.keys(edge), EDGE_KEYS.filter((key) => key in edge));
      assert.ok(Array.isArray(edge.hostports));
      assert.equal(edge.uri, `${server.baseUrl}/edges/tls/${edge.id}`);
    }
    // One request per page of 2, no extra round trip for an empty last page.
    await waitFor(() => pageRequests(before) >= Math.ceil(live.size / 2));
    assert.equal(pageRequests(before), Math.ceil(live.size / 2));
  });

  it('lists from a given beforeId', async () => {
    const all = [...live].sort().reverse();
    const listed = await within(10_000, ngrok.edges.edgesTls.list(all[2]!, '3'), 'edgesTls.list');
    assert.deepEqual(
      listed.map((edge) => edge.id),
      all.slice(3),
    );
  });

  it('updates given fields and leaves the others unchanged (the client sends the whole argument)', async () => {
    const created = await createEdge({ description: 'before', metadata: 'm0', hostports: ['a.example.com:443'] });
    // update() PATCHes the whole argument, snake-cased: {"id":…,"description":…}; the body's id
    // equals the path id and must be accepted.
    const described = await ngrok.edges.edgesTls.update({ id: created.id, description: 'after' });
    assert.equal(described.id, created.id);
    assert.equal(described.description, 'after');
    assert.equal(described.metadata, 'm0');
    assert.deepEqual(described.hostports, ['a.example.com:443']);

    const moved = await ngrok.edges.edgesTls.update({ id: created.id, hostports: ['b.example.com:8443'] });
    assert.equal(moved.description, 'after');
    assert.equal(moved.metadata, 'm0');
    assert.deepEqual(moved.hostports, ['b.example.com:8443']);

    const more = await ngrok.edges.edgesTls.update({ id: created.id, hostports: ['b.example.com:8443', '192.0.2.1:443'], metadata: '{"v":2}' });
    assert.equal(more.description, 'after');
    assert.equal(more.metadata, '{"v":2}');
    assert.deepEqual(more.hostports, ['b.example.com:8443', '192.0.2.1:443']);

    const untouched = await ngrok.edges.edgesTls.update({ id: created.id });
    assert.deepEqual({ ...untouched }, { ...more });

    const cleared = await ngrok.edges.edgesTls.update({ id: created.id, description: '', metadata: '', hostports: [] });
    assert.equal(cleared.description, undefined);
    assert.equal(cleared.metadata, undefined);
    assert.deepEqual(cleared.hostports, []);

    const got = await ngrok.edges.edgesTls.get(created.id);
    assert.deepEqual({ ...got }, { ...cleared });
    assert.equal(got.createdAt, created.createdAt);
    assert.equal(got.uri, created.uri);
  });

  it('accepts null for the modules burrow does not serve and rejects a value for one', async () => {
    const created = await createEdge({ description: 'modules' });
    // A user passing null for the unset modules: serialized as is, to be accepted and ignored.
    const nulls = { id: created.id, description: 'nulls', backend: null, ipRestriction: null, mutualTls: null, tlsTermination: null, policy: null };
    const updated = await ngrok.edges.edgesTls.update(nulls as unknown as TLSEdgeUpdate);
    assert.equal(updated.description, 'nulls');
    assert.equal(updated.ipRestriction, null);

    const onCreate = apiError(await rejection(ngrok.edges.edgesTls.create({ ipRestriction: { ipPolicyIds: ['ipp_x'] } })), 400);
    assert.equal(onCreate.errorCode, 'ERR_NGROK_215');
    const onUpdate = apiError(
      await rejection(ngrok.edges.edgesTls.update({ id: created.id, description: 'never', ipRestriction: { ipPolicyIds: ['ipp_x'] } })),
      400,
    );
    assert.equal(onUpdate.errorCode, 'ERR_NGROK_215');
    assert.equal((await ngrok.edges.edgesTls.get(created.id)).description, 'nulls', 'a rejected update changes nothing');
  });

  it('rejects invalid hostports and a mismatched body id with ERR_NGROK_215', async () => {
    const bad = apiError(await rejection(ngrok.edges.edgesTls.create({ hostports: ['example.com:0'] })), 400);
    assert.equal(bad.errorCode, 'ERR_NGROK_215');
    const tooMany = Array.from({ length: 11 }, (_, i) => `h${i}.example.com:443`);
    const many = apiError(await rejection(ngrok.edges.edgesTls.create({ hostports: tooMany })), 400);
    assert.equal(many.errorCode, 'ERR_NGROK_215');

    const created = await createEdge({ description: 'stable', hostports: ['c.example.com:443'] });
    const onUpdate = apiError(await rejection(ngrok.edges.edgesTls.update({ id: created.id, hostports: ['no-port.example.com'] })), 400);
    assert.equal(onUpdate.errorCode, 'ERR_NGROK_215');
    assert.deepEqual((await ngrok.edges.edgesTls.get(created.id)).hostports, ['c.example.com:443']);
  });

  it('deletes an edge: the client stumbles on the empty 204, the edge is gone', async () => {
    const created = await createEdge({ description: 'to delete' });
    await deleteEdge(created.id);

    const error = apiError(await rejection(ngrok.edges.edgesTls.get(created.id)), 404);
    assert.equal(error.msg, 'Resource not found');
    assert.equal(error.errorCode, undefined, 'not found carries no error_code');

    // Deleting again is a 404 error object, not the SyntaxError of an empty body.
    const again = apiError(await rejection(ngrok.edges.edgesTls.delete(created.id)), 404);
    assert.equal(again.msg, 'Resource not found');
  });

  it('rejects get, update and delete of an unknown edge with the 404 error object, a foreign beforeId with 400', async () => {
    for (const call of [
      () => ngrok.edges.edgesTls.get(UNKNOWN_EDGE),
      () => ngrok.edges.edgesTls.update({ id: UNKNOWN_EDGE, description: 'x' }),
      () => ngrok.edges.edgesTls.delete(UNKNOWN_EDGE),
      // A credential id is not an edge id: the same generic not-found.
      () => ngrok.edges.edgesTls.get('cr_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns'),
    ]) {
      const error = apiError(await rejection(call()), 404);
      assert.equal(error.msg, 'Resource not found');
      assert.equal(error.errorCode, undefined);
    }
    // Paging from an id that is not an edge id is a 400, not a silent empty list.
    const paging = apiError(await rejection(ngrok.edges.edgesTls.list('cr_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns')), 400);
    assert.equal(paging.errorCode, 'ERR_NGROK_227');
  });
});

describe('the traffic policy module through the client’s HTTP client (wrapped PUT body)', () => {
  it('stores and returns the policy byte for byte, and the edge shows it', async () => {
    const edge = await createEdge({ description: 'with policy' });
    const put = await putModule(edge.id, { enabled: false, value: ODD_POLICY });
    assert.deepEqual(put, { enabled: false, value: ODD_POLICY });
    assert.deepEqual(Object.keys(put as Module), ['enabled', 'value']);

    const got = await getModule(edge.id);
    assert.deepEqual(got, { enabled: false, value: ODD_POLICY });
    assert.equal((got as Module).value, ODD_POLICY, 'byte for byte');

    const withModule = await ngrok.edges.edgesTls.get(edge.id);
    assert.deepEqual(moduleOf(withModule), { enabled: false, value: ODD_POLICY });
    // The module does not disturb the other fields.
    assert.equal(withModule.description, 'with policy');
    assert.deepEqual(Object.keys(withModule), EDGE_KEYS.filter((key) => key !== 'metadata'));

    // The edge in the list carries it too.
    const listed = await within(10_000, ngrok.edges.edgesTls.list(), 'edgesTls.list');
    assert.deepEqual(moduleOf(listed.find((e) => e.id === edge.id)!), { enabled: false, value: ODD_POLICY });
  });

  it('replaces the whole module; enabled left out means true', async () => {
    const edge = await createEdge({ description: 'enabled default' });
    await putModule(edge.id, { enabled: false, value: ODD_POLICY });
    const put = await putModule(edge.id, { value: DENY_ALL });
    assert.deepEqual(put, { enabled: true, value: DENY_ALL });
    assert.deepEqual(await getModule(edge.id), { enabled: true, value: DENY_ALL });
    assert.deepEqual(moduleOf(await ngrok.edges.edgesTls.get(edge.id)), { enabled: true, value: DENY_ALL });

    // The empty document is a valid policy that does nothing.
    assert.deepEqual(await putModule(edge.id, { enabled: true, value: '' }), { enabled: true, value: '' });
    assert.deepEqual(await getModule(edge.id), { enabled: true, value: '' });
  });

  it('rejects an invalid policy with 400 ERR_NGROK_2230 and keeps the stored module', async () => {
    const edge = await createEdge({ description: 'invalid policy' });
    await putModule(edge.id, { enabled: false, value: ODD_POLICY });

    const body = httpError(await rejection(putModule(edge.id, { enabled: true, value: HTTP_PHASE_POLICY })), 400);
    assert.equal(body.error_code, 'ERR_NGROK_2230');
    assert.match(body.msg, /on_http_request/);

    // Another kind of invalid: an unknown action type.
    const unknownAction = 'on_tcp_connect:\n  - actions:\n      - type: teleport\n';
    const second = httpError(await rejection(putModule(edge.id, { value: unknownAction })), 400);
    assert.equal(second.error_code, 'ERR_NGROK_2201');

    assert.deepEqual(await getModule(edge.id), { enabled: false, value: ODD_POLICY });
    assert.deepEqual(moduleOf(await ngrok.edges.edgesTls.get(edge.id)), { enabled: false, value: ODD_POLICY });
  });

  it('rejects a wrapper id that is not the path id and a module without value', async () => {
    const edge = await createEdge({ description: 'wrapper' });
    const other = http.url(policyPath(edge.id)).put(JSON.stringify({ id: UNKNOWN_EDGE, module: { value: DENY_ALL } })).json();
    assert.equal(httpError(await rejection(other), 400).error_code, 'ERR_NGROK_215');
    const noValue = http.url(policyPath(edge.id)).put(JSON.stringify({ id: edge.id, module: { enabled: true } })).json();
    assert.equal(httpError(await rejection(noValue), 400).error_code, 'ERR_NGROK_215');
    // Nothing was stored.
    assertNotFound(httpError(await rejection(getModule(edge.id)), 404));
  });

  it('deletes the module with 204; then GET is 404 and the edge shows null; deleting again is 204', async () => {
    const edge = await createEdge({ description: 'module to delete' });
    await putModule(edge.id, { value: DENY_ALL });

    const deleted = await http.url(policyPath(edge.id)).delete().res();
    assert.equal(deleted.status, 204);
    assert.equal(await deleted.text(), '');

    assertNotFound(httpError(await rejection(getModule(edge.id)), 404));
    const bare = await ngrok.edges.edgesTls.get(edge.id);
    assert.equal(moduleOf(bare), null);
    assert.equal(bare.description, 'module to delete', 'the edge itself stays');

    const again = await http.url(policyPath(edge.id)).delete().res();
    assert.equal(again.status, 204, 'deleting a module that is not there succeeds');
  });

  it('answers 404 for PUT, GET and DELETE on an unknown edge, and on a deleted one', async () => {
    const gone = await createEdge({ description: 'deleted with its module' });
    await putModule(gone.id, { value: DENY_ALL });
    await deleteEdge(gone.id);

    for (const id of [UNKNOWN_EDGE, gone.id]) {
      assertNotFound(httpError(await rejection(putModule(id, { value: DENY_ALL })), 404));
      assertNotFound(httpError(await rejection(getModule(id)), 404));
      assertNotFound(httpError(await rejection(http.url(policyPath(id)).delete().res()), 404));
    }
    // The PUT on the unknown id created nothing.
    const listed = await within(10_000, ngrok.edges.edgesTls.list(), 'edgesTls.list');
    assert.ok(!listed.some((edge) => edge.id === UNKNOWN_EDGE || edge.id === gone.id));
  });

  it('creates an edge carrying a module (POST /edges/tls with traffic_policy, absent from 0.11.0 datatypes)', async () => {
    // TLSEdgeCreate in 0.11.0 has no trafficPolicy field, so the body goes through the client's
    // HTTP client: traffic_policy is the module object itself (SPEC §7.1).
    const response = await http
      .url('/edges/tls')
      .post(JSON.stringify({ description: 'born with policy', hostports: ['p.example.com:443'], traffic_policy: { enabled: false, value: ODD_POLICY } }))
      .res();
    assert.equal(response.status, 201);
    const raw = JSON.parse(await response.text()) as { id: string; uri: string; traffic_policy: unknown };
    assert.match(raw.id, EDGE_ID);
    live.add(raw.id);
    assert.equal(response.headers.get('location'), raw.uri);
    assert.deepEqual(raw.traffic_policy, { enabled: false, value: ODD_POLICY });

    const got = await ngrok.edges.edgesTls.get(raw.id);
    assert.deepEqual(moduleOf(got), { enabled: false, value: ODD_POLICY });
    assert.equal(got.description, 'born with policy');
    assert.deepEqual(got.hostports, ['p.example.com:443']);
    assert.deepEqual(await getModule(raw.id), { enabled: false, value: ODD_POLICY });

    // An invalid module on create is rejected, and no edge is made.
    const beforeCount = (await within(10_000, ngrok.edges.edgesTls.list(), 'edgesTls.list')).length;
    const invalid = http.url('/edges/tls').post(JSON.stringify({ description: 'never', traffic_policy: { value: HTTP_PHASE_POLICY } })).json();
    assert.equal(httpError(await rejection(invalid), 400).error_code, 'ERR_NGROK_2230');
    // The wrapper is not accepted inside an edge body: traffic_policy is the module itself.
    const wrapped = http.url('/edges/tls').post(JSON.stringify({ traffic_policy: { module: { value: DENY_ALL } } })).json();
    assert.equal(httpError(await rejection(wrapped), 400).error_code, 'ERR_NGROK_214');
    assert.equal((await within(10_000, ngrok.edges.edgesTls.list(), 'edgesTls.list')).length, beforeCount);
  });

  it('replaces the module through PATCH /edges/tls/{id} and leaves it alone when not given', async () => {
    const edge = await createEdge({ description: 'patch module' });
    await putModule(edge.id, { enabled: false, value: ODD_POLICY });

    // update() without a module leaves it as it is.
    const described = await ngrok.edges.edgesTls.update({ id: edge.id, description: 'patched' });
    assert.deepEqual(moduleOf(described), { enabled: false, value: ODD_POLICY });

    const patched = JSON.parse(
      await http
        .url(`/edges/tls/${edge.id}`)
        .patch(JSON.stringify({ id: edge.id, traffic_policy: { value: DENY_ALL } }))
        .res()
        .then((response) => response.text()),
    ) as { description: string; traffic_policy: unknown };
    assert.equal(patched.description, 'patched');
    assert.deepEqual(patched.traffic_policy, { enabled: true, value: DENY_ALL });
    assert.deepEqual(await getModule(edge.id), { enabled: true, value: DENY_ALL });
  });
});

describe('after everything', () => {
  it('leaves nothing behind that the list does not show', async () => {
    const listed = await within(10_000, ngrok.edges.edgesTls.list(), 'edgesTls.list');
    assert.deepEqual(new Set(listed.map((edge) => edge.id)), live);
  });
});

/** GET /edges/tls requests logged after the first `skip` log lines. */
function pageRequests(skip: number): number {
  return server
    .logs()
    .slice(skip)
    .filter((entry) => entry.msg === 'request completed' && entry.method === 'GET' && entry.route === '/edges/tls').length;
}

/** Polls a condition briefly: the server writes its request line just after answering. */
async function waitFor(condition: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}
