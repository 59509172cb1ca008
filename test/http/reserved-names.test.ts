import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

/** /reserved_domains and /reserved_addrs (CERTIFICATES.md §0) through inject(), on either store. */

interface ReservedDomain {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  domain: string;
  region: string;
  cname_target: string | null;
  certificate: unknown;
  certificate_management_policy: { authority: string; private_key_type: string } | null;
  certificate_management_status: { renews_at: string | null; provisioning_job: { error_code: string | null; msg: string; started_at: string; retries_at: string | null } | null } | null;
  acme_challenge_cname_target: string | null;
}
interface ReservedAddr {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  addr: string;
  region: string;
}

const BASE = 'https://api.example.com';
const DOMAIN_KEYS = [
  'id',
  'uri',
  'created_at',
  'description',
  'metadata',
  'domain',
  'region',
  'cname_target',
  'certificate',
  'certificate_management_policy',
  'certificate_management_status',
  'acme_challenge_cname_target',
];
const UNKNOWN_DOMAIN = 'rd_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
const UNKNOWN_ADDR = 'ra_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';

let t: TestApp;
let stranger: Caller;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: BASE, EDGE_TCP_PORTS: '21000-21003', EDGE_PUBLIC_HOST: 'tcp.example.net', EDGE_DOMAIN: 'tunnels.example.net', REGION: 'eu' });
  stranger = await t.newCaller({ newAccount: true });
});
after(() => t.close());

async function reserveDomain(body: unknown, key?: string): Promise<ReservedDomain> {
  const response = await t.call({ method: 'POST', url: '/reserved_domains', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  const reserved = json<ReservedDomain>(response);
  assert.equal(response.headers.location, reserved.uri);
  return reserved;
}

async function reserveAddr(body: unknown = {}, key?: string): Promise<ReservedAddr> {
  const response = await t.call({ method: 'POST', url: '/reserved_addrs', body, ...(key ? { key } : {}) });
  assert.equal(response.statusCode, 201, response.body);
  return json<ReservedAddr>(response);
}

describe('reserved domains', () => {
  it('creates one in the reference shape, lower-cased, with the server region and a CNAME target', async () => {
    const reserved = await reserveDomain({ domain: 'App.Example.com', description: 'the app', metadata: '{"a":1}' });
    assert.deepEqual(Object.keys(reserved), DOMAIN_KEYS);
    assert.match(reserved.id, /^rd_[0-9A-Za-z]{27}$/);
    assert.equal(reserved.uri, `${BASE}/reserved_domains/${reserved.id}`);
    assert.match(reserved.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(reserved.domain, 'app.example.com');
    assert.equal(reserved.region, 'eu');
    assert.equal(reserved.cname_target, 'tcp.example.net');
    assert.equal(reserved.certificate, null);
    assert.equal(reserved.certificate_management_policy, null);
    assert.equal(reserved.certificate_management_status, null);
    assert.equal(reserved.acme_challenge_cname_target, null);
    const got = await t.call({ method: 'GET', url: `/reserved_domains/${reserved.id}` });
    assert.deepEqual(json(got), reserved);
  });

  it('leaves out empty description and metadata, and has no CNAME target under EDGE_DOMAIN', async () => {
    const reserved = await reserveDomain({ domain: 'mine.tunnels.example.net', region: 'eu' });
    assert.ok(!('description' in reserved) && !('metadata' in reserved));
    assert.equal(reserved.cname_target, null);
  });

  it('stores a certificate management policy and says ACME is not configured', async () => {
    const reserved = await reserveDomain({ domain: 'tls.example.com', certificate_management_policy: { authority: 'letsencrypt', private_key_type: 'ecdsa' } });
    assert.deepEqual(reserved.certificate_management_policy, { authority: 'letsencrypt', private_key_type: 'ecdsa' });
    const job = reserved.certificate_management_status?.provisioning_job;
    assert.equal(reserved.certificate_management_status?.renews_at, null);
    assert.equal(job?.error_code, 'ACME_NOT_CONFIGURED');
    assert.match(job?.msg ?? '', /ACME is not configured/);
    assert.equal(job?.started_at, reserved.created_at);
    // defaults, then removal through the reference's sub-resource
    const defaults = await reserveDomain({ domain: 'tls2.example.com', certificate_management_policy: {} });
    assert.deepEqual(defaults.certificate_management_policy, { authority: 'letsencrypt', private_key_type: 'rsa' });
    const removed = await t.call({ method: 'DELETE', url: `/reserved_domains/${defaults.id}/certificate_management_policy` });
    assert.equal(removed.statusCode, 204);
    const after = json<ReservedDomain>(await t.call({ method: 'GET', url: `/reserved_domains/${defaults.id}` }));
    assert.equal(after.certificate_management_policy, null);
    assert.equal(after.certificate_management_status, null);
    assert.equal((await t.call({ method: 'DELETE', url: `/reserved_domains/${defaults.id}/certificate` })).statusCode, 204);
    assert.equal((await t.call({ method: 'DELETE', url: `/reserved_domains/${UNKNOWN_DOMAIN}/certificate` })).statusCode, 404);
  });

  it('refuses bad domains, certificate_id, another region and a bad policy with 215 naming the field, storing nothing', async () => {
    const cases: [unknown, string][] = [
      [{}, 'domain'],
      [{ domain: '' }, 'domain'],
      [{ domain: null }, 'domain'],
      [{ domain: 'localhost' }, 'domain'],
      [{ domain: '*.*.example.com' }, 'domain'],
      [{ domain: 'a.*.example.com' }, 'domain'],
      [{ domain: '-bad.example.com' }, 'domain'],
      [{ domain: '10.0.0.1' }, 'domain'],
      [{ domain: 'app.example.com:443' }, 'domain'],
      [{ domain: 42 }, 'domain'],
      [{ domain: 'cert.example.com', certificate_id: 'cert_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns' }, 'certificate_id'],
      [{ domain: 'cert.example.com', region: 'us' }, 'region'],
      [{ domain: 'cert.example.com', certificate_management_policy: { authority: 'zerossl' } }, 'certificate_management_policy.authority'],
      [{ domain: 'cert.example.com', certificate_management_policy: { private_key_type: 'dsa' } }, 'certificate_management_policy.private_key_type'],
      [{ domain: 'cert.example.com', resolves_to: [{ value: 'eu' }] }, 'resolves_to'],
    ];
    for (const [body, param] of cases) {
      const error = expectError(await t.call({ method: 'POST', url: '/reserved_domains', body }), 400, 'ERR_NGROK_215');
      assert.equal((error.details as Record<string, string>).param, param, JSON.stringify(body));
    }
    expectError(await t.call({ method: 'POST', url: '/reserved_domains', body: { domain: 'x.example.com', hostname: 'x' } }), 400, 'ERR_NGROK_214');
    const listed = json<{ reserved_domains: ReservedDomain[] }>(await t.call({ method: 'GET', url: '/reserved_domains' }));
    assert.ok(!listed.reserved_domains.some((item) => item.domain === 'cert.example.com'));
  });

  it('accepts the clients\' nulls and empty values', async () => {
    const reserved = await reserveDomain({ domain: 'nulls.example.com', region: null, certificate_id: null, certificate_management_policy: null, resolves_to: null, description: null });
    assert.equal(reserved.domain, 'nulls.example.com');
    assert.equal((await reserveDomain({ domain: 'empty-cert.example.com', certificate_id: '', resolves_to: [] })).domain, 'empty-cert.example.com');
  });

  it('413 for a name the account has, 414 for another account\'s or one its wildcard covers, 417 for a wildcard over another\'s', async () => {
    await reserveDomain({ domain: 'owned.example.org' });
    expectError(await t.call({ method: 'POST', url: '/reserved_domains', body: { domain: 'OWNED.example.org' } }), 400, 'ERR_NGROK_413');
    expectError(await t.call({ method: 'POST', url: '/reserved_domains', body: { domain: 'owned.example.org' }, key: stranger.key }), 400, 'ERR_NGROK_414');
    // another account's wildcard
    await reserveDomain({ domain: '*.stranger.example.org' }, stranger.key);
    for (const domain of ['a.stranger.example.org', 'a.b.stranger.example.org', '*.x.stranger.example.org', '*.stranger.example.org']) {
      expectError(await t.call({ method: 'POST', url: '/reserved_domains', body: { domain } }), 400, 'ERR_NGROK_414');
    }
    // the wildcard's own base is not under it
    await reserveDomain({ domain: 'stranger.example.org' });
    // a wildcard over another account's names
    expectError(await t.call({ method: 'POST', url: '/reserved_domains', body: { domain: '*.example.org' }, key: stranger.key }), 400, 'ERR_NGROK_417');
    // over the account's own names it is fine
    await reserveDomain({ domain: 'deep.mine.example.com' });
    await reserveDomain({ domain: '*.mine.example.com' });
  });

  it('updates description, metadata and the policy; checks the body before the id; keeps the domain', async () => {
    const reserved = await reserveDomain({ domain: 'update.example.com', description: 'before' });
    const response = await t.call({ method: 'PATCH', url: `/reserved_domains/${reserved.id}`, body: { id: reserved.id, metadata: 'm', certificate_management_policy: { private_key_type: 'ecdsa' } } });
    assert.equal(response.statusCode, 200, response.body);
    const updated = json<ReservedDomain>(response);
    assert.equal(updated.description, 'before');
    assert.equal(updated.metadata, 'm');
    assert.equal(updated.domain, 'update.example.com');
    assert.equal(updated.certificate_management_policy?.private_key_type, 'ecdsa');
    const cleared = json<ReservedDomain>(await t.call({ method: 'PATCH', url: `/reserved_domains/${reserved.id}`, body: { description: '' } }));
    assert.ok(!('description' in cleared));
    assert.equal(cleared.certificate_management_policy?.private_key_type, 'ecdsa');
    expectError(await t.call({ method: 'PATCH', url: `/reserved_domains/${reserved.id}`, body: { domain: 'other.example.com' } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'PATCH', url: `/reserved_domains/${reserved.id}`, body: { id: UNKNOWN_DOMAIN } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/reserved_domains/${UNKNOWN_DOMAIN}`, body: { certificate_id: 'cert_x' } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'PATCH', url: `/reserved_domains/${UNKNOWN_DOMAIN}`, body: {} }), 404, undefined);
    expectError(await t.call({ method: 'PATCH', url: `/reserved_domains/${reserved.id}`, body: { description: 'x'.repeat(256) } }), 400, 'ERR_NGROK_604');
  });

  it('isolates accounts: another account\'s reservation is 404 for get, update and delete, and absent from its list', async () => {
    const reserved = await reserveDomain({ domain: 'isolated.example.com' });
    expectError(await t.call({ method: 'GET', url: `/reserved_domains/${reserved.id}`, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'PATCH', url: `/reserved_domains/${reserved.id}`, body: {}, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'DELETE', url: `/reserved_domains/${reserved.id}`, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'DELETE', url: `/reserved_domains/${reserved.id}/certificate_management_policy`, key: stranger.key }), 404, undefined);
    const theirs = json<{ reserved_domains: ReservedDomain[] }>(await t.call({ method: 'GET', url: '/reserved_domains', key: stranger.key }));
    assert.ok(!theirs.reserved_domains.some((item) => item.id === reserved.id));
    expectError(await t.call({ method: 'GET', url: '/reserved_domains/cr_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns' }), 404, undefined);
  });

  it('pages newest first and frees the name on delete', async () => {
    const created = [];
    for (let i = 0; i < 3; i++) created.push(await reserveDomain({ domain: `page${i}.example.net` }));
    const first = json<{ reserved_domains: ReservedDomain[]; uri: string; next_page_uri: string | null }>(await t.call({ method: 'GET', url: '/reserved_domains?limit=2' }));
    assert.equal(first.uri, `${BASE}/reserved_domains`);
    assert.deepEqual(first.reserved_domains.map((item) => item.id), [created[2]!.id, created[1]!.id]);
    assert.equal(first.next_page_uri, `${BASE}/reserved_domains?before_id=${created[1]!.id}&limit=2`);
    expectError(await t.call({ method: 'GET', url: '/reserved_domains?before_id=ra_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns' }), 400, 'ERR_NGROK_227');
    assert.equal((await t.call({ method: 'DELETE', url: `/reserved_domains/${created[0]!.id}` })).statusCode, 204);
    expectError(await t.call({ method: 'DELETE', url: `/reserved_domains/${created[0]!.id}` }), 404, undefined);
    await reserveDomain({ domain: 'page0.example.net' }, stranger.key);
  });
});

describe('reserved addresses', () => {
  it('gives a free port of EDGE_TCP_PORTS on EDGE_PUBLIC_HOST, a different one each time, until none is left (409)', async () => {
    const first = await reserveAddr({ description: 'db', metadata: 'm' });
    assert.deepEqual(Object.keys(first), ['id', 'uri', 'created_at', 'description', 'metadata', 'addr', 'region']);
    assert.match(first.id, /^ra_[0-9A-Za-z]{27}$/);
    assert.equal(first.uri, `${BASE}/reserved_addrs/${first.id}`);
    assert.equal(first.region, 'eu');
    const others = [await reserveAddr({ region: 'eu' }), await reserveAddr({}, stranger.key), await reserveAddr({ region: null, description: null })];
    const addrs = [first, ...others].map((item) => item.addr).sort();
    assert.deepEqual(addrs, ['tcp.example.net:21000', 'tcp.example.net:21001', 'tcp.example.net:21002', 'tcp.example.net:21003']);
    expectError(await t.call({ method: 'POST', url: '/reserved_addrs', body: {} }), 409, undefined);
    // a deleted one's port is free again
    assert.equal((await t.call({ method: 'DELETE', url: `/reserved_addrs/${first.id}` })).statusCode, 204);
    assert.equal((await reserveAddr({}, stranger.key)).addr, first.addr);
  });

  it('refuses another region, an addr and unknown fields, and checks the body before the id', async () => {
    expectError(await t.call({ method: 'POST', url: '/reserved_addrs', body: { region: 'us' } }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/reserved_addrs', body: { addr: 'tcp.example.net:21000' } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'POST', url: '/reserved_addrs', body: { metadata: 'x'.repeat(4097) } }), 400, 'ERR_NGROK_605');
    expectError(await t.call({ method: 'PATCH', url: `/reserved_addrs/${UNKNOWN_ADDR}`, body: { region: 'eu' } }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'PATCH', url: `/reserved_addrs/${UNKNOWN_ADDR}`, body: {} }), 404, undefined);
  });

  it('updates, lists and isolates', async () => {
    const mine = json<{ reserved_addrs: ReservedAddr[] }>(await t.call({ method: 'GET', url: '/reserved_addrs' })).reserved_addrs;
    assert.ok(mine.length > 0);
    const target = mine[0]!;
    const updated = json<ReservedAddr>(await t.call({ method: 'PATCH', url: `/reserved_addrs/${target.id}`, body: { id: target.id, description: 'renamed' } }));
    assert.equal(updated.description, 'renamed');
    assert.equal(updated.addr, target.addr);
    expectError(await t.call({ method: 'GET', url: `/reserved_addrs/${target.id}`, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'DELETE', url: `/reserved_addrs/${target.id}`, key: stranger.key }), 404, undefined);
    const theirs = json<{ reserved_addrs: ReservedAddr[] }>(await t.call({ method: 'GET', url: '/reserved_addrs', key: stranger.key })).reserved_addrs;
    assert.ok(!theirs.some((item) => item.id === target.id));
  });
});

describe('reserved names in /openapi.json', () => {
  it('documents every operation and both shapes', async () => {
    const doc = json<{ paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, { properties: Record<string, unknown> }> } }>(
      await t.call({ method: 'GET', url: '/openapi.json', key: null, version: false }),
    );
    assert.deepEqual(Object.keys(doc.paths['/reserved_domains'] ?? {}).sort(), ['get', 'post']);
    assert.deepEqual(Object.keys(doc.paths['/reserved_domains/{id}'] ?? {}).sort(), ['delete', 'get', 'patch']);
    assert.deepEqual(Object.keys(doc.paths['/reserved_domains/{id}/certificate_management_policy'] ?? {}), ['delete']);
    assert.deepEqual(Object.keys(doc.paths['/reserved_addrs'] ?? {}).sort(), ['get', 'post']);
    assert.deepEqual(Object.keys(doc.paths['/reserved_addrs/{id}'] ?? {}).sort(), ['delete', 'get', 'patch']);
    assert.deepEqual(Object.keys(doc.components.schemas.ReservedDomain!.properties), DOMAIN_KEYS);
    assert.deepEqual(Object.keys(doc.components.schemas.ReservedAddr!.properties), ['id', 'uri', 'created_at', 'description', 'metadata', 'addr', 'region']);
  });
});

describe('reserved addresses without TCP ports', () => {
  it('409 says that the server serves no TCP addresses', async () => {
    const bare = await createTestApp({ EDGE_TCP_PORTS: '' });
    try {
      const error = expectError(await bare.call({ method: 'POST', url: '/reserved_addrs', body: {} }), 409, undefined);
      assert.match(String(error.msg), /EDGE_TCP_PORTS is empty/);
    } finally {
      await bare.close();
    }
  });
});
