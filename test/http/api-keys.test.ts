import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

interface ApiKey {
  id: string;
  uri: string;
  description?: string;
  metadata?: string;
  created_at: string;
  token: string | null;
  owner_id: string;
}

interface KeyList {
  keys: ApiKey[];
  uri: string;
  next_page_uri: string | null;
}

let t: TestApp;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
});
after(() => t.close());

async function create(body: unknown = {}, key?: string): Promise<ApiKey> {
  const response = await t.call({ method: 'POST', url: '/api_keys', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  return json<ApiKey>(response);
}

describe('/api_keys', () => {
  it('creates a key shown once, in the reference field order, that authenticates', async () => {
    const response = await t.call({ method: 'POST', url: '/api_keys', body: { description: 'ci', metadata: '{"a":1}' } });
    assert.equal(response.statusCode, 201);
    const made = json<ApiKey>(response);
    assert.deepEqual(Object.keys(made), ['id', 'uri', 'description', 'metadata', 'created_at', 'token', 'owner_id']);
    assert.match(made.id, /^ak_[0-9A-Za-z]{27}$/);
    assert.equal(made.uri, `https://api.example.com/api_keys/${made.id}`);
    assert.equal(response.headers.location, made.uri);
    assert.equal(made.owner_id, t.admin.principal.id);
    assert.match(made.token!, /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/);
    assert.equal(made.token!.slice(0, 27), made.id.slice(3));

    const asNewKey = await t.call({ method: 'GET', url: '/credentials', key: made.token! });
    assert.equal(asNewKey.statusCode, 200);
    const got = json<ApiKey>(await t.call({ method: 'GET', url: `/api_keys/${made.id}` }));
    assert.equal(got.token, null);
    assert.equal(got.description, 'ci');
  });

  it('leaves out empty description and metadata, and treats null as absent', async () => {
    const made = await create({ description: null, metadata: null, owner_id: null });
    assert.deepEqual(Object.keys(made), ['id', 'uri', 'created_at', 'token', 'owner_id']);
  });

  it('updates description and metadata; "" clears; id must match; owner_id is unknown', async () => {
    const made = await create({ description: 'old', metadata: 'm' });
    const updated = json<ApiKey>(await t.call({ method: 'PATCH', url: `/api_keys/${made.id}`, body: { id: made.id, description: 'new' } }));
    assert.equal(updated.description, 'new');
    assert.equal(updated.metadata, 'm');
    assert.equal(updated.token, null);
    const cleared = json<ApiKey>(await t.call({ method: 'PATCH', url: `/api_keys/${made.id}`, body: { metadata: '' } }));
    assert.ok(!('metadata' in cleared));
    expectError(await t.call({ method: 'PATCH', url: `/api_keys/${made.id}`, body: { id: 'ak_other' } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/api_keys/${made.id}`, body: { owner_id: 'usr_x' } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'PATCH', url: `/api_keys/${made.id}`, body: { description: 'é'.repeat(128) } }), 400, 'ERR_NGROK_604');
    expectError(await t.call({ method: 'POST', url: '/api_keys', body: { metadata: 'm'.repeat(4097) } }), 400, 'ERR_NGROK_605');
    assert.equal(json<ApiKey>(await t.call({ method: 'GET', url: `/api_keys/${made.id}` })).description, 'new', 'a rejected update changes nothing');
  });

  it('deletes (revokes): 204, gone from get and list, and the key stops authenticating within a second', async () => {
    const made = await create({ description: 'short-lived' });
    assert.equal((await t.call({ method: 'GET', url: '/credentials', key: made.token! })).statusCode, 200);
    const deleted = await t.call({ method: 'DELETE', url: `/api_keys/${made.id}` });
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, '');
    await sleep(1000);
    expectError(await t.call({ method: 'GET', url: '/credentials', key: made.token! }), 401, 'ERR_NGROK_203');
    expectError(await t.call({ method: 'GET', url: `/api_keys/${made.id}` }), 404, undefined);
    expectError(await t.call({ method: 'DELETE', url: `/api_keys/${made.id}` }), 404, undefined);
    const list = json<KeyList>(await t.call({ method: 'GET', url: '/api_keys' }));
    assert.ok(!list.keys.some((key) => key.id === made.id));
    // the CLI's view of the same row: revoked, not removed
    const rows = await t.accounts.listApiKeys(t.admin.principal.accountId);
    assert.ok(rows.find((row) => row.id === made.id)?.revokedAt);
  });

  it('lists newest first with keyset pages, and answers bad paging in SPEC words', async () => {
    const made = [await create(), await create(), await create()];
    const page = json<KeyList>(await t.call({ method: 'GET', url: '/api_keys?limit=2' }));
    assert.equal(page.uri, 'https://api.example.com/api_keys');
    assert.deepEqual(page.keys.map((key) => key.id), [made[2]!.id, made[1]!.id]);
    assert.equal(page.next_page_uri, `https://api.example.com/api_keys?before_id=${made[1]!.id}&limit=2`);
    assert.ok(page.keys.every((key) => key.token === null));
    const next = json<KeyList>(await t.call({ method: 'GET', url: `/api_keys?before_id=${made[1]!.id}&limit=1` }));
    assert.deepEqual(next.keys.map((key) => key.id), [made[0]!.id]);
    expectError(await t.call({ method: 'GET', url: '/api_keys?before_id=cr_0000000000000000000000000000' }), 400, 'ERR_NGROK_227');
    expectError(await t.call({ method: 'GET', url: '/api_keys?limit=0' }), 400, 'ERR_NGROK_244');
  });

  it('the CLI-made keys show up (same rows); the bootstrap key is listed', async () => {
    const { key } = await t.accounts.createApiKey(t.admin.principal.id, 'made by the CLI');
    const got = json<ApiKey>(await t.call({ method: 'GET', url: `/api_keys/${key.id}` }));
    assert.equal(got.description, 'made by the CLI');
    const list = json<KeyList>(await t.call({ method: 'GET', url: '/api_keys' }));
    assert.ok(list.keys.some((item) => item.description === 'bootstrap admin key'));
  });

  it('owner rules: admins manage every key of the account, others only their own', async () => {
    const member = await t.newCaller({ kind: 'bot' });
    const otherMember = await t.newCaller({ kind: 'user' });
    const adminKey = await create({ description: 'admin only' });
    const own = await create({}, member.key);
    assert.equal(own.owner_id, member.principal.id);

    const memberList = json<KeyList>(await t.call({ method: 'GET', url: '/api_keys', key: member.key }));
    assert.ok(memberList.keys.every((key) => key.owner_id === member.principal.id));
    assert.ok(memberList.keys.some((key) => key.id === own.id));
    for (const method of ['GET', 'DELETE'] as const) {
      expectError(await t.call({ method, url: `/api_keys/${adminKey.id}`, key: member.key }), 404, undefined);
    }
    expectError(await t.call({ method: 'PATCH', url: `/api_keys/${adminKey.id}`, body: { description: 'x' }, key: member.key }), 404, undefined);
    expectError(await t.call({ method: 'POST', url: '/api_keys', body: { owner_id: otherMember.principal.id }, key: member.key }), 403, 'ERR_NGROK_630');

    const forMember = await create({ owner_id: member.principal.id });
    assert.equal(forMember.owner_id, member.principal.id);
    expectError(await t.call({ method: 'POST', url: '/api_keys', body: { owner_id: 'usr_nobody' } }), 400, 'ERR_NGROK_634');
    const adminList = json<KeyList>(await t.call({ method: 'GET', url: '/api_keys' }));
    assert.ok(adminList.keys.some((key) => key.id === own.id), 'an admin sees a member’s key');
    assert.equal((await t.call({ method: 'DELETE', url: `/api_keys/${own.id}` })).statusCode, 204);
  });

  it('another account’s keys are 404 and never listed', async () => {
    const stranger = await t.newCaller({ newAccount: true, admin: true });
    const mine = await create();
    expectError(await t.call({ method: 'GET', url: `/api_keys/${mine.id}`, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'DELETE', url: `/api_keys/${mine.id}`, key: stranger.key }), 404, undefined);
    const list = json<KeyList>(await t.call({ method: 'GET', url: '/api_keys', key: stranger.key }));
    assert.deepEqual(list.keys.map((key) => key.owner_id), [stranger.principal.id]);
    expectError(await t.call({ method: 'GET', url: '/api_keys/ak_malformed' }), 404, undefined);
  });

  it('is in /openapi.json', async () => {
    const doc = json<{ paths: Record<string, Record<string, { operationId: string }>> }>(await t.call({ method: 'GET', url: '/openapi.json' }));
    assert.equal(doc.paths['/api_keys']?.post?.operationId, 'createApiKey');
    assert.equal(doc.paths['/api_keys/{id}']?.patch?.operationId, 'updateApiKey');
  });
});
