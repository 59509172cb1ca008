import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

interface Credential {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  token: string | null;
  acl: string[];
  owner_id: string;
}

let t: TestApp;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
});
after(() => t.close());

async function create(body: unknown = {}, key?: string): Promise<Credential> {
  const response = await t.call({ method: 'POST', url: '/credentials', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  return json<Credential>(response);
}

describe('POST /credentials', () => {
  it('answers 201 with the fields in SPEC order, the token, and a Location header', async () => {
    const response = await t.call({
      method: 'POST',
      url: '/credentials',
      body: { description: 'ci runner', metadata: '{"team":"infra"}', acl: ['bind:*.example.com', 'bind:env=prod'] },
    });
    assert.equal(response.statusCode, 201);
    const body = json<Credential>(response);
    assert.deepEqual(Object.keys(body), ['id', 'uri', 'created_at', 'description', 'metadata', 'token', 'acl', 'owner_id']);
    assert.match(body.id, /^cr_[0-9A-Za-z]{27}$/);
    assert.equal(body.uri, `https://api.example.com/credentials/${body.id}`);
    assert.equal(response.headers.location, body.uri);
    assert.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(Math.abs(Date.parse(body.created_at) - Date.now()) < 5000);
    assert.equal(body.description, 'ci runner');
    assert.equal(body.metadata, '{"team":"infra"}');
    assert.deepEqual(body.acl, ['bind:*.example.com', 'bind:env=prod']);
    assert.equal(body.owner_id, t.admin.principal.id);
    assert.equal(body.token, `${body.id.slice(3)}${body.token!.slice(27)}`, 'the token starts with the KSUID of the id');
    assert.match(body.token!, /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/);
  });

  it('with an empty body: acl [] and no description or metadata at all', async () => {
    const body = await create({});
    assert.deepEqual(Object.keys(body), ['id', 'uri', 'created_at', 'token', 'acl', 'owner_id']);
    assert.deepEqual(body.acl, []);
  });

  it('treats null fields as absent (the Rust and .NET clients send them)', async () => {
    const body = await create({ description: null, metadata: null, acl: null, owner_id: null });
    assert.deepEqual(body.acl, []);
    assert.equal(body.owner_id, t.admin.principal.id);
    assert.ok(!('description' in body) && !('metadata' in body));
  });

  it('makes ids that sort in creation order and tokens that differ', async () => {
    const made = [];
    for (let i = 0; i < 20; i++) made.push(await create());
    const ids = made.map((c) => c.id);
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(made.map((c) => c.token)).size, 20);
  });

  it('counts description and metadata limits in bytes', async () => {
    assert.equal((await create({ description: 'a'.repeat(255) })).description!.length, 255);
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { description: 'a'.repeat(256) } }), 400, 'ERR_NGROK_604');
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { description: 'é'.repeat(128) } }), 400, 'ERR_NGROK_604');
    assert.equal((await create({ description: 'é'.repeat(127) + 'a' })).description, 'é'.repeat(127) + 'a');
    assert.equal((await create({ metadata: 'm'.repeat(4096) })).metadata!.length, 4096);
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { metadata: 'm'.repeat(4097) } }), 400, 'ERR_NGROK_605');
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { metadata: '€'.repeat(1366) } }), 400, 'ERR_NGROK_605');
  });

  it('keeps every valid ACL rule of SPEC 5.3, in order', async () => {
    const acl = ['*', 'bind:*', 'bind:app.example.com', 'bind:*.example.com', 'bind:1.tcp.example.net:20002', 'bind:10.0.0.7:8443', 'bind:env=prod', 'bind:app=*', 'bind:*=edge'];
    assert.deepEqual((await create({ acl })).acl, acl);
  });

  for (const rule of ['bind:', 'bind:*.*.example.com', 'bind:example.com:0', 'bind:example.com:080', 'bind:-bad.example.com', 'connect:example.com', 'bind: x.com', 'bind:*=*', 'bind:256.1.1.1:80', 'bind:01.2.3.4:80', 'bind:*.1.2.3.4', 'BIND:x.com']) {
    it(`400 ERR_NGROK_600 for the ACL rule ${JSON.stringify(rule)}`, async () => {
      const response = await t.call({ method: 'POST', url: '/credentials', body: { acl: ['bind:ok.example.com', rule] } });
      const body = expectError(response, 400, 'ERR_NGROK_600');
      assert.match(body.msg as string, /rule 2/);
    });
  }

  it('limits an ACL to 100 rules of 255 bytes', async () => {
    const hundred = Array.from({ length: 100 }, (_, i) => `bind:h${i}.example.com`);
    assert.equal((await create({ acl: hundred })).acl.length, 100);
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { acl: [...hundred, 'bind:x.example.com'] } }), 400, 'ERR_NGROK_600');
    const long = `bind:${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}`;
    assert.equal(Buffer.byteLength(long), 255);
    assert.equal((await create({ acl: [long] })).acl[0], long);
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { acl: [`${long}e`] } }), 400, 'ERR_NGROK_600');
  });

  it('400 ERR_NGROK_215 for a non-string ACL element', async () => {
    for (const element of [1, null, ['bind:*'], { rule: 'bind:*' }, true]) {
      const response = await t.call({ method: 'POST', url: '/credentials', body: { acl: ['bind:*', element] } });
      expectError(response, 400, 'ERR_NGROK_215');
    }
  });
});

describe('owner_id', () => {
  let member: Caller;
  let otherAdmin: Caller;
  let stranger: Caller;
  before(async () => {
    member = await t.newCaller({ kind: 'bot' });
    otherAdmin = await t.newCaller({ kind: 'user', admin: true });
    stranger = await t.newCaller({ kind: 'user', newAccount: true });
  });

  it('defaults to the caller, and "" means the same', async () => {
    assert.equal((await create({}, member.key)).owner_id, member.principal.id);
    assert.equal((await create({ owner_id: '' }, member.key)).owner_id, member.principal.id);
    assert.equal((await create({ owner_id: member.principal.id }, member.key)).owner_id, member.principal.id);
  });

  it('an admin may name any user or bot of the account', async () => {
    assert.equal((await create({ owner_id: member.principal.id })).owner_id, member.principal.id);
    assert.equal((await create({ owner_id: otherAdmin.principal.id })).owner_id, otherAdmin.principal.id);
  });

  it('403 ERR_NGROK_630 when a non-admin names anyone else, existing or not', async () => {
    for (const ownerId of [t.admin.principal.id, 'usr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'nonsense', stranger.principal.id]) {
      const response = await t.call({ method: 'POST', url: '/credentials', key: member.key, body: { owner_id: ownerId } });
      expectError(response, 403, 'ERR_NGROK_630');
    }
  });

  it('400 ERR_NGROK_634 when an admin names someone not of the account', async () => {
    for (const ownerId of ['usr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'bot_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'nonsense', stranger.principal.id, 'cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ']) {
      const response = await t.call({ method: 'POST', url: '/credentials', body: { owner_id: ownerId } });
      expectError(response, 400, 'ERR_NGROK_634');
    }
  });

  it('a revoked user or bot cannot be named as owner', async () => {
    const gone = await t.newCaller({ kind: 'bot' });
    await t.accounts.revokePrincipal(gone.principal.id);
    expectError(await t.call({ method: 'POST', url: '/credentials', body: { owner_id: gone.principal.id } }), 400, 'ERR_NGROK_634');
  });

  it('cannot be changed by PATCH: it is an unknown field there', async () => {
    const credential = await create();
    const response = await t.call({ method: 'PATCH', url: `/credentials/${credential.id}`, body: { owner_id: member.principal.id } });
    expectError(response, 400, 'ERR_NGROK_214');
  });
});

describe('GET /credentials/{id}', () => {
  it('returns the credential with token null and the same fields', async () => {
    const created = await create({ description: 'd', acl: ['bind:x.example.com'] });
    const response = await t.call({ method: 'GET', url: `/credentials/${created.id}` });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(json(response), { ...created, token: null });
  });

  it('404 without error_code for unknown, malformed and other-account ids', async () => {
    const stranger = await t.newCaller({ newAccount: true });
    const theirs = await create({}, stranger.key);
    for (const id of ['cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'cr_short', 'abc', theirs.id, `edgtls_${theirs.id.slice(3)}`, 'cr_' + 'z'.repeat(27)]) {
      const response = await t.call({ method: 'GET', url: `/credentials/${encodeURIComponent(id)}` });
      expectError(response, 404, undefined);
      assert.equal(json(response).msg, 'Resource not found');
    }
    for (const method of ['PATCH', 'DELETE'] as const) {
      expectError(await t.call({ method, url: `/credentials/${theirs.id}`, ...(method === 'PATCH' ? { body: {} } : {}) }), 404, undefined);
    }
    assert.equal((await t.call({ method: 'GET', url: `/credentials/${theirs.id}`, key: stranger.key })).statusCode, 200, 'untouched');
  });
});

describe('PATCH /credentials/{id}', () => {
  it('leaves absent and null fields unchanged and returns the full credential, token null', async () => {
    const created = await create({ description: 'keep', metadata: 'meta', acl: ['bind:a.example.com'] });
    const response = await t.call({ method: 'PATCH', url: `/credentials/${created.id}`, body: { description: 'changed', metadata: null } });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(json(response), { ...created, description: 'changed', token: null });
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/credentials/${created.id}` })), { ...created, description: 'changed', token: null });
  });

  it('"" clears description and metadata; [] clears the ACL', async () => {
    const created = await create({ description: 'd', metadata: 'm', acl: ['bind:a.example.com'] });
    const body = json<Credential>(await t.call({ method: 'PATCH', url: `/credentials/${created.id}`, body: { description: '', metadata: '', acl: [] } }));
    assert.deepEqual(Object.keys(body), ['id', 'uri', 'created_at', 'token', 'acl', 'owner_id']);
    assert.deepEqual(body.acl, []);
  });

  it('an empty body changes nothing and returns the credential', async () => {
    const created = await create({ description: 'same' });
    const response = await t.call({ method: 'PATCH', url: `/credentials/${created.id}` });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(json(response), { ...created, token: null });
  });

  it('accepts id in the body when it equals the path id, 400 ERR_NGROK_215 otherwise', async () => {
    const created = await create();
    const same = await t.call({ method: 'PATCH', url: `/credentials/${created.id}`, body: { id: created.id, description: 'x' } });
    assert.equal(json(same).description, 'x');
    const other = await create();
    const response = await t.call({ method: 'PATCH', url: `/credentials/${created.id}`, body: { id: other.id, description: 'y' } });
    const error = expectError(response, 400, 'ERR_NGROK_215');
    assert.equal((error.details as Record<string, string>).param, 'id');
    assert.equal(json(await t.call({ method: 'GET', url: `/credentials/${created.id}` })).description, 'x');
    assert.equal(json(await t.call({ method: 'GET', url: `/credentials/${other.id}` })).description, undefined);
  });

  it('a rejected update changes nothing', async () => {
    const created = await create({ description: 'orig', acl: ['bind:a.example.com'] });
    for (const body of [
      { description: 'new', acl: ['bind:'] },
      { description: 'new', metadata: 'x'.repeat(4097) },
      { acl: ['bind:b.example.com'], description: 'y'.repeat(256) },
      { description: 'new', unknown: 1 },
      { description: 'new', acl: [1] },
    ]) {
      const response = await t.call({ method: 'PATCH', url: `/credentials/${created.id}`, body });
      assert.equal(response.statusCode, 400);
    }
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/credentials/${created.id}` })), { ...created, token: null });
  });

  it('checks the body before looking the id up: a bad body on an unknown id gets the body error', async () => {
    const unknown = 'cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ';
    expectError(await t.call({ method: 'PATCH', url: `/credentials/${unknown}`, body: { acl: ['nope'] } }), 400, 'ERR_NGROK_600');
    expectError(await t.call({ method: 'PATCH', url: `/credentials/${unknown}`, body: { bogus: 1 } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'PATCH', url: `/credentials/${unknown}`, body: '[' }), 400, 'ERR_NGROK_213');
    expectError(await t.call({ method: 'PATCH', url: `/credentials/${unknown}`, body: { description: 'ok' } }), 404, undefined);
  });
});

describe('DELETE /credentials/{id}', () => {
  it('answers 204 with no body, after which the credential is gone', async () => {
    const created = await create();
    const response = await t.call({ method: 'DELETE', url: `/credentials/${created.id}` });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    assert.equal(response.headers['content-type'], undefined);
    expectError(await t.call({ method: 'GET', url: `/credentials/${created.id}` }), 404, undefined);
    expectError(await t.call({ method: 'DELETE', url: `/credentials/${created.id}` }), 404, undefined);
  });
});

describe('GET /credentials: listing and pagination', () => {
  let lister: Caller;
  const ids: string[] = [];
  before(async () => {
    lister = await t.newCaller({ newAccount: true });
    for (let i = 0; i < 7; i++) ids.push((await create({ description: `n${i}` }, lister.key)).id);
    ids.reverse(); // newest first
  });

  const list = (query = '') => t.call({ method: 'GET', url: `/credentials${query}`, key: lister.key });

  it('lists the account newest first with token null, uri and next_page_uri null', async () => {
    const response = await list();
    assert.equal(response.statusCode, 200);
    const body = json<{ credentials: Credential[]; uri: string; next_page_uri: string | null }>(response);
    assert.deepEqual(Object.keys(body), ['credentials', 'uri', 'next_page_uri']);
    assert.deepEqual(body.credentials.map((c) => c.id), ids);
    assert.ok(body.credentials.every((c) => c.token === null));
    assert.equal(body.uri, 'https://api.example.com/credentials');
    assert.equal(body.next_page_uri, null);
  });

  it('pages with limit and before_id, and next_page_uri leads to the next page', async () => {
    const first = json<{ credentials: Credential[]; next_page_uri: string }>(await list('?limit=3'));
    assert.deepEqual(first.credentials.map((c) => c.id), ids.slice(0, 3));
    assert.equal(first.next_page_uri, `https://api.example.com/credentials?before_id=${ids[2]}&limit=3`);
    const next = new URL(first.next_page_uri);
    const second = json<{ credentials: Credential[]; next_page_uri: string }>(await list(next.search));
    assert.deepEqual(second.credentials.map((c) => c.id), ids.slice(3, 6));
    const third = json<{ credentials: Credential[]; next_page_uri: string | null }>(await list(new URL(second.next_page_uri).search));
    assert.deepEqual(third.credentials.map((c) => c.id), ids.slice(6));
    assert.equal(third.next_page_uri, null);
  });

  it('has no next page when the page exactly ends the list, and an empty page never has one', async () => {
    assert.equal(json(await list('?limit=7')).next_page_uri, null);
    const empty = json<{ credentials: unknown[]; next_page_uri: null }>(await list(`?before_id=${ids[6]}`));
    assert.deepEqual(empty.credentials, []);
    assert.equal(empty.next_page_uri, null);
  });

  it('accepts beforeId as before_id (the npm client), and an empty before_id as absent', async () => {
    assert.deepEqual(json<{ credentials: Credential[] }>(await list(`?beforeId=${ids[1]}&limit=2`)).credentials.map((c) => c.id), ids.slice(2, 4));
    assert.deepEqual(json<{ credentials: Credential[] }>(await list('?before_id=')).credentials.length, 7);
    assert.deepEqual(json<{ credentials: Credential[] }>(await list(`?before_id=&beforeId=${ids[4]}`)).credentials.map((c) => c.id), ids.slice(5));
  });

  it('400 ERR_NGROK_232 when before_id and beforeId are both given', async () => {
    expectError(await list(`?before_id=${ids[0]}&beforeId=${ids[1]}`), 400, 'ERR_NGROK_232');
  });

  for (const limit of ['', '05', '+5', '1.0', '0', '101', '-1', 'abc', '1e2', ' 5', '99999999999999999999']) {
    it(`400 ERR_NGROK_244 for limit=${JSON.stringify(limit)}`, async () => {
      expectError(await list(`?limit=${encodeURIComponent(limit)}`), 400, 'ERR_NGROK_244');
    });
  }

  it('accepts limit 1 and 100', async () => {
    assert.equal(json<{ credentials: unknown[] }>(await list('?limit=1')).credentials.length, 1);
    assert.equal(json<{ credentials: unknown[] }>(await list('?limit=100')).credentials.length, 7);
  });

  for (const beforeId of ['nope', 'edgtls_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', 'cr_short', 'usr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ']) {
    it(`400 ERR_NGROK_227 for before_id=${beforeId}`, async () => {
      expectError(await list(`?before_id=${beforeId}`), 400, 'ERR_NGROK_227');
    });
  }

  it('shows only the caller account', async () => {
    const mine = json<{ credentials: Credential[] }>(await list()).credentials.map((c) => c.id);
    const adminView = json<{ credentials: Credential[] }>(await t.call({ method: 'GET', url: '/credentials' })).credentials.map((c) => c.id);
    assert.ok(mine.every((id) => !adminView.includes(id)));
  });
});

describe('uri fields without PUBLIC_URL', () => {
  it('use the Host header, and X-Forwarded-* only when TRUST_PROXY is set', async () => {
    const plain = await createTestApp();
    const trusting = await createTestApp({ TRUST_PROXY: 'true' });
    try {
      const headers = { host: 'burrow.internal:8080', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.org' };
      const a = json<Credential>(await plain.call({ method: 'POST', url: '/credentials', headers }));
      assert.equal(a.uri, `http://burrow.internal:8080/credentials/${a.id}`);
      const b = json<Credential>(await trusting.call({ method: 'POST', url: '/credentials', headers }));
      assert.equal(b.uri, `https://api.example.org/credentials/${b.id}`);
      // a scheme that is not a web one would be written into every uri: refused, nothing created
      const before = json<{ credentials: Credential[] }>(await trusting.call({ method: 'GET', url: '/credentials' })).credentials.length;
      const bad = await trusting.call({ method: 'POST', url: '/credentials', headers: { ...headers, 'x-forwarded-proto': 'javascript' } });
      assert.equal(bad.statusCode, 400, bad.body);
      assert.match(json<{ msg: string }>(bad).msg, /X-Forwarded-Proto/);
      assert.equal(json<{ credentials: Credential[] }>(await trusting.call({ method: 'GET', url: '/credentials' })).credentials.length, before);
      // a scheme is case-insensitive (RFC 3986 §3.1); uris carry it in lower case
      const upper = json<Credential>(await trusting.call({ method: 'POST', url: '/credentials', headers: { ...headers, 'x-forwarded-proto': 'HTTPS' } }));
      assert.equal(upper.uri, `https://api.example.org/credentials/${upper.id}`);
      // without TRUST_PROXY the header is not read at all
      assert.equal((await plain.call({ method: 'POST', url: '/credentials', headers: { ...headers, 'x-forwarded-proto': 'javascript' } })).statusCode, 201);
    } finally {
      await plain.close();
      await trusting.close();
    }
  });
});
