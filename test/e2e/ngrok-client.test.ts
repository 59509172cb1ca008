import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ngrok, type Credential } from '@ngrok/ngrok-api';
import { apiError, rejection, within } from '../helpers/ngrok-client.js';
import { cleanupProcesses, generateApiKey, startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * The official npm client (@ngrok/ngrok-api 0.11.0), used exactly as a user would, against a
 * real `burrow serve` process with only its base URL changed (SPEC preamble, compat rules).
 */

const TOKEN_SHAPE = /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/;
const CREDENTIAL_ID = /^cr_[0-9A-Za-z]{27}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;


let server: ServerProcess;
let ngrok: Ngrok;
/** Every credential this file created and has not deleted: the account's whole list. */
const live = new Set<string>();

before(async () => {
  server = await startServer();
  ngrok = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
});

after(cleanupProcesses);




async function create(arg: Parameters<Ngrok['credentials']['create']>[0]): Promise<Credential> {
  const credential = await ngrok.credentials.create(arg);
  live.add(credential.id);
  return credential;
}

describe('@ngrok/ngrok-api 0.11.0 against a burrow process', () => {
  it('creates a credential with its token, ACL and description', async () => {
    const credential = await create({
      description: 'laptop of ada',
      metadata: '{"team":"infra"}',
      acl: ['bind:app.example.com', 'bind:*.example.net'],
    });
    assert.match(credential.id, CREDENTIAL_ID);
    assert.equal(credential.uri, `${server.baseUrl}/credentials/${credential.id}`);
    // Typed as a Date by the client, but it passes the JSON string through unchanged.
    assert.match(String(credential.createdAt), TIMESTAMP);
    assert.equal(credential.description, 'laptop of ada');
    assert.equal(credential.metadata, '{"team":"infra"}');
    assert.equal(typeof credential.token, 'string');
    assert.match(credential.token!, TOKEN_SHAPE);
    // The token's first half is the KSUID of the credential's id (SPEC §5.2).
    assert.equal(credential.token!.slice(0, 27), credential.id.slice(3));
    assert.deepEqual(credential.acl, ['bind:app.example.com', 'bind:*.example.net']);
    assert.equal(credential.ownerId, server.bootstrap?.userId);
    assert.match(credential.ownerId!, /^usr_[0-9A-Za-z]{27}$/);
  });

  it('creates with an empty argument: acl [] and no description or metadata', async () => {
    const credential = await create({ acl: [] });
    assert.deepEqual(credential.acl, []);
    assert.equal(credential.description, undefined);
    assert.equal(credential.metadata, undefined);
    assert.match(credential.token!, TOKEN_SHAPE);
  });

  it('gets a credential with a null token', async () => {
    const created = await create({ description: 'to get', acl: ['bind:env=prod'] });
    const got = await ngrok.credentials.get(created.id);
    assert.equal(got.id, created.id);
    assert.equal(got.uri, created.uri);
    assert.equal(got.createdAt, created.createdAt);
    assert.equal(got.description, 'to get');
    assert.equal(got.token, null);
    assert.deepEqual(got.acl, ['bind:env=prod']);
    assert.equal(got.ownerId, created.ownerId);
  });

  it('lists across several pages: every credential once, newest first, and stops', async () => {
    for (let i = 0; i < 7; i++) await create({ description: `page item ${i}`, acl: [] });
    const before = server.logs().length;
    // The client pages by sending `beforeId` (camel case) with the last id of each page.
    const listed = await within(10_000, ngrok.credentials.list(undefined, '2'), 'credentials.list');
    const ids = listed.map((c) => c.id);
    assert.equal(new Set(ids).size, ids.length, 'no credential may be listed twice');
    assert.deepEqual(new Set(ids), live, 'the list must hold exactly the live credentials');
    assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');
    for (const credential of listed) {
      assert.equal(credential.token, null);
      assert.ok(Array.isArray(credential.acl));
    }
    // One request per page of 2, no extra round trips.
    await waitFor(() => pageRequests(before) >= Math.ceil(live.size / 2));
    assert.equal(pageRequests(before), Math.ceil(live.size / 2));
  });

  it('lists from a given beforeId', async () => {
    const all = [...live].sort().reverse();
    const pivot = all[2]!;
    const listed = await within(10_000, ngrok.credentials.list(pivot, '3'), 'credentials.list');
    assert.deepEqual(
      listed.map((c) => c.id),
      all.slice(3),
    );
  });

  it('updates given fields and leaves the others unchanged', async () => {
    const created = await create({ description: 'before', metadata: 'm0', acl: ['bind:a.example.com'] });

    const described = await ngrok.credentials.update({ id: created.id, description: 'after' });
    assert.equal(described.description, 'after');
    assert.equal(described.metadata, 'm0');
    assert.deepEqual(described.acl, ['bind:a.example.com']);
    assert.equal(described.token, null);

    const tagged = await ngrok.credentials.update({ id: created.id, metadata: '{"v":2}' });
    assert.equal(tagged.description, 'after');
    assert.equal(tagged.metadata, '{"v":2}');
    assert.deepEqual(tagged.acl, ['bind:a.example.com']);

    const restricted = await ngrok.credentials.update({ id: created.id, acl: ['bind:b.example.com', '*'] });
    assert.equal(restricted.description, 'after');
    assert.equal(restricted.metadata, '{"v":2}');
    assert.deepEqual(restricted.acl, ['bind:b.example.com', '*']);

    const untouched = await ngrok.credentials.update({ id: created.id });
    assert.deepEqual({ ...untouched }, { ...restricted });

    const cleared = await ngrok.credentials.update({ id: created.id, description: '', metadata: '', acl: [] });
    assert.equal(cleared.description, undefined);
    assert.equal(cleared.metadata, undefined);
    assert.deepEqual(cleared.acl, []);

    const got = await ngrok.credentials.get(created.id);
    assert.deepEqual({ ...got }, { ...cleared });
    assert.equal(got.createdAt, created.createdAt);
    assert.equal(got.ownerId, created.ownerId);
  });

  it('deletes a credential: the client stumbles on the empty 204, the credential is gone', async () => {
    const created = await create({ description: 'to delete', acl: [] });
    let outcome: unknown = 'resolved';
    try {
      await ngrok.credentials.delete(created.id);
    } catch (error) {
      outcome = error;
    }
    // It rejects with the SyntaxError of parsing the empty body as JSON (or, in a fixed client,
    // resolves). Anything else, such as an API error object, is a real failure.
    assert.ok(outcome === 'resolved' || outcome instanceof SyntaxError, `delete failed: ${JSON.stringify(outcome)}`);
    live.delete(created.id);

    const error = apiError(await rejection(ngrok.credentials.get(created.id)), 404);
    assert.equal(error.msg, 'Resource not found');
    assert.equal(error.errorCode, undefined, 'not found carries no error_code');

    // Deleting again is a 404 error object, not the SyntaxError of an empty body.
    const again = apiError(await rejection(ngrok.credentials.delete(created.id)), 404);
    assert.equal(again.msg, 'Resource not found');
  });

  it('rejects a get of an unknown id with the 404 error object', async () => {
    const error = apiError(await rejection(ngrok.credentials.get('cr_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns')), 404);
    assert.equal(error.msg, 'Resource not found');
    assert.equal(error.errorCode, undefined);
    assert.deepEqual([...error.details.keys()], ['operationId']);
  });

  it('rejects an update of an unknown id with the 404 error object', async () => {
    const error = apiError(await rejection(ngrok.credentials.update({ id: 'cr_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns', description: 'x' })), 404);
    assert.equal(error.msg, 'Resource not found');
  });

  it('rejects an invalid ACL rule with ERR_NGROK_600', async () => {
    const error = apiError(await rejection(ngrok.credentials.create({ acl: ['bind:'] })), 400);
    assert.equal(error.errorCode, 'ERR_NGROK_600');
  });

  it('rejects a description over 255 bytes with ERR_NGROK_604', async () => {
    // 128 × "é" is 128 characters but 256 bytes.
    const error = apiError(await rejection(ngrok.credentials.create({ description: 'é'.repeat(128), acl: [] })), 400);
    assert.equal(error.errorCode, 'ERR_NGROK_604');
    const fits = await create({ description: 'é'.repeat(127) + 'x', acl: [] });
    assert.equal(fits.description, 'é'.repeat(127) + 'x');
  });

  it('rejects an invalid update without changing the credential', async () => {
    const created = await create({ description: 'stable', acl: ['bind:c.example.com'] });
    const error = apiError(await rejection(ngrok.credentials.update({ id: created.id, description: 'new', acl: ['connect:x.com'] })), 400);
    assert.equal(error.errorCode, 'ERR_NGROK_600');
    const got = await ngrok.credentials.get(created.id);
    assert.equal(got.description, 'stable');
    assert.deepEqual(got.acl, ['bind:c.example.com']);
  });

  it('leaves nothing behind that the list does not show', async () => {
    const listed = await within(10_000, ngrok.credentials.list(), 'credentials.list');
    assert.deepEqual(new Set(listed.map((c) => c.id)), live);
  });

  it('rejects a wrong API key with ERR_NGROK_203', async () => {
    const wrongKey = generateApiKey();
    const stranger = new Ngrok({ apiToken: wrongKey, baseUrl: server.baseUrl });
    const error = apiError(await rejection(stranger.credentials.list()), 401);
    assert.equal(error.errorCode, 'ERR_NGROK_203');
    const onGet = apiError(await rejection(stranger.credentials.get([...live][0]!)), 401);
    assert.equal(onGet.errorCode, 'ERR_NGROK_203');
    // The secret is never echoed in full.
    assert.ok(!error.msg.includes(wrongKey));
    assert.ok(![...error.details.values()].some((value) => value.includes(wrongKey)));
  });
});

/** GET /credentials requests logged after the first `skip` log lines. */
function pageRequests(skip: number): number {
  return server
    .logs()
    .slice(skip)
    .filter((entry) => entry.msg === 'request completed' && entry.method === 'GET' && entry.route === '/credentials').length;
}

/** Polls a condition briefly: the server writes its request line just after answering. */
async function waitFor(condition: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}
