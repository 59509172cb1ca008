import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ngrok, type EndpointBackend, type TLSEdge, type TunnelGroupBackend, type TunnelGroupBackendCreate } from '@ngrok/ngrok-api';
import { apiError, rejection, within } from '../helpers/ngrok-client.js';
import { cleanupProcesses, startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * Tunnel group backends and the TLS edge backend module (TUNNELS.md §4) through the official npm
 * client (@ngrok/ngrok-api 0.11.0), unchanged, against a real `burrow serve` process:
 * `ngrok.backends.tunnelGroupBackends` and `ngrok.edgeModules.tlsEdgeBackendModule` (which PUTs
 * the wrapped body `{id, module: {backend_id, enabled}}`), and `backend` in `edges.edgesTls`.
 *
 * Two quirks of the client, not of burrow: `labels` is typed as a `Map`, but the client's key
 * conversion turns a Map into `{}` before its JSON replacer sees it, so labels must be passed as a
 * plain object; and it camel/snake-converts every key, label keys included (`app_name` comes back
 * as `appName`), so these tests use label keys without `_` or `-`.
 */

const GROUP_ID = /^bkdtg_[0-9A-Za-z]{27}$/;
const UNKNOWN_GROUP = 'bkdtg_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
const GROUP_KEYS = ['id', 'uri', 'createdAt', 'description', 'metadata', 'labels', 'tunnels'];

let server: ServerProcess;
let ngrok: Ngrok;

before(async () => {
  server = await startServer();
  ngrok = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
});

after(cleanupProcesses);

/** Labels as the client can actually send them (see above). */
const labels = (object: Record<string, string>) => object as unknown as Map<string, string>;
const groups = () => ngrok.backends.tunnelGroupBackends;
const modules = () => ngrok.edgeModules.tlsEdgeBackendModule;

/** 0.11.0's delete() rejects with the SyntaxError of parsing the empty 204 body; that is success. */
async function deleted(call: Promise<void>): Promise<void> {
  let outcome: unknown = 'resolved';
  try {
    await call;
  } catch (error) {
    outcome = error;
  }
  assert.ok(outcome === 'resolved' || outcome instanceof SyntaxError, `delete failed: ${JSON.stringify(outcome)}`);
}

function createGroup(arg: Record<string, unknown>): Promise<TunnelGroupBackend> {
  return groups().create(arg as unknown as TunnelGroupBackendCreate);
}

describe('@ngrok/ngrok-api 0.11.0 tunnelGroupBackends against a burrow process', () => {
  it('creates, gets, updates and deletes a group', async () => {
    const created = await createGroup({ description: 'web pool', metadata: 'm', labels: { env: 'prod', app: 'web' } });
    assert.match(created.id, GROUP_ID);
    assert.equal(created.uri, `${server.baseUrl}/backends/tunnel_group/${created.id}`);
    assert.deepEqual(Object.keys(created), GROUP_KEYS);
    assert.deepEqual(created.labels, { app: 'web', env: 'prod' });
    assert.deepEqual(created.tunnels, []);

    const got = await groups().get(created.id);
    assert.deepEqual({ ...got }, { ...created });

    // update() PATCHes the whole argument, id included.
    const updated = await groups().update({ id: created.id, description: 'renamed', labels: labels({ tier: 'db' }) });
    assert.equal(updated.description, 'renamed');
    assert.equal(updated.metadata, 'm');
    assert.deepEqual(updated.labels, { tier: 'db' });

    await deleted(groups().delete(created.id));
    const gone = apiError(await rejection(groups().get(created.id)), 404);
    assert.equal(gone.msg, 'Resource not found');
    assert.equal(gone.errorCode, undefined);
  });

  it('lists every group once across pages (the client pages with beforeId) and stops', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createGroup({ labels: { n: String(i) } })).id);
    const listed = await within(10_000, groups().list(undefined, '2'), 'tunnelGroupBackends.list');
    const listedIds = listed.map((group) => group.id);
    assert.equal(new Set(listedIds).size, listedIds.length);
    for (const id of ids) assert.ok(listedIds.includes(id), id);
    assert.deepEqual(listedIds, [...listedIds].sort().reverse(), 'newest first');
    for (const group of listed) assert.deepEqual(Object.keys(group), GROUP_KEYS.filter((key) => key in group));
  });

  it('rejects bad labels with the client error object: ERR_NGROK_215 naming labels', async () => {
    for (const arg of [{ labels: {} }, { labels: { 'a b': 'x' } }, { description: 'no labels' }]) {
      const error = apiError(await rejection(createGroup(arg)), 400);
      assert.equal(error.errorCode, 'ERR_NGROK_215');
      assert.equal(error.details.get('param'), 'labels');
    }
    // What a caller following the client's own types gets: the Map is lost on the way.
    const typed = apiError(await rejection(groups().create({ labels: new Map([['env', 'prod']]) })), 400);
    assert.equal(typed.errorCode, 'ERR_NGROK_215');
  });
});

describe('@ngrok/ngrok-api 0.11.0 TLS edge backend module against a burrow process', () => {
  it('replaces (wrapped body), gets and deletes the module; the edge shows it', async () => {
    const group = await createGroup({ labels: { env: 'prod' } });
    const edge = await ngrok.edges.edgesTls.create({ description: 'with backend', hostports: ['edge.example.com:443'] });
    assert.equal(edge.backend, null);

    const replaced: EndpointBackend = await modules().replace({ id: edge.id, module: { backendId: group.id, enabled: false } });
    const expected = { enabled: false, backend: { id: group.id, uri: group.uri } };
    assert.deepEqual(replaced, expected);
    assert.deepEqual(await modules().get(edge.id), expected);
    assert.deepEqual((await ngrok.edges.edgesTls.get(edge.id)).backend, expected);

    // enabled left out means true.
    assert.deepEqual(await modules().replace({ id: edge.id, module: { backendId: group.id } }), { ...expected, enabled: true });

    // The group is in use: deleting it is refused, and says which edge uses it.
    const inUse = apiError(await rejection(groups().delete(group.id)), 409);
    assert.equal(inUse.errorCode, undefined);
    assert.match(inUse.msg, new RegExp(edge.id));

    await deleted(modules().delete(edge.id));
    apiError(await rejection(modules().get(edge.id)), 404);
    assert.equal((await ngrok.edges.edgesTls.get(edge.id)).backend, null);
    await deleted(groups().delete(group.id));
  });

  it('refuses a backend_id that is no group of the account with ERR_NGROK_215', async () => {
    const edge = await ngrok.edges.edgesTls.create({});
    const error = apiError(await rejection(modules().replace({ id: edge.id, module: { backendId: UNKNOWN_GROUP } })), 400);
    assert.equal(error.errorCode, 'ERR_NGROK_215');
    assert.equal(error.details.get('param'), 'module.backend_id');
    const onCreate = apiError(await rejection(ngrok.edges.edgesTls.create({ backend: { backendId: UNKNOWN_GROUP } })), 400);
    assert.equal(onCreate.errorCode, 'ERR_NGROK_215');
    assert.equal(onCreate.details.get('param'), 'backend.backend_id');
    apiError(await rejection(modules().get(edge.id)), 404);
  });

  it('creates and updates an edge with backend {backendId, enabled}', async () => {
    const first = await createGroup({ labels: { env: 'prod' } });
    const second = await createGroup({ labels: { env: 'dev' } });
    const edge: TLSEdge = await ngrok.edges.edgesTls.create({ backend: { backendId: first.id } });
    assert.deepEqual(edge.backend, { enabled: true, backend: { id: first.id, uri: first.uri } });
    const moved = await ngrok.edges.edgesTls.update({ id: edge.id, backend: { backendId: second.id, enabled: false } });
    assert.deepEqual(moved.backend, { enabled: false, backend: { id: second.id, uri: second.uri } });
    const kept = await ngrok.edges.edgesTls.update({ id: edge.id, description: 'kept' });
    assert.deepEqual(kept.backend, moved.backend);
  });
});
