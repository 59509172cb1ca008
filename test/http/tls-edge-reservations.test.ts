import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

/** TLS edge hostports honour reserved domains (CERTIFICATES.md §0), through inject(), on either store. */

let t: TestApp;
let stranger: Caller;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
  stranger = await t.newCaller({ newAccount: true });
  for (const domain of ['owned.example.com', '*.wild.example.com']) {
    const response = await t.call({ method: 'POST', url: '/reserved_domains', body: { domain } });
    assert.equal(response.statusCode, 201, response.body);
  }
});
after(() => t.close());

async function edgeCount(key: string): Promise<number> {
  const response = await t.call({ method: 'GET', url: '/edges/tls', key });
  return json<{ tls_edges: unknown[] }>(response).tls_edges.length;
}

describe('TLS edge hostports and reserved domains', () => {
  it("refuses another account's reserved name (exact, wildcard-covered, any case) with 7111 naming the hostport, and creates nothing", async () => {
    const before = await edgeCount(stranger.key);
    for (const hostport of ['owned.example.com:443', 'a.wild.example.com:443', 'deep.b.wild.example.com:8443', 'OWNED.example.com:443']) {
      const response = await t.call({ method: 'POST', url: '/edges/tls', body: { hostports: ['free.example.com:443', hostport] }, key: stranger.key });
      const error = expectError(response, 400, 'ERR_NGROK_7111');
      assert.match(error.msg as string, new RegExp(hostport.replace(/[.*]/g, '\\$&')));
      assert.equal((error.details as Record<string, string>).param, 'hostports');
    }
    assert.equal(await edgeCount(stranger.key), before);
  });

  it('lets the owner use its reserved names, and anyone use names nobody reserved and IP hostports', async () => {
    const own = await t.call({ method: 'POST', url: '/edges/tls', body: { hostports: ['owned.example.com:443', 'x.wild.example.com:443'] } });
    assert.equal(own.statusCode, 201, own.body);
    const other = await t.call({ method: 'POST', url: '/edges/tls', body: { hostports: ['free.example.com:443', '10.0.0.7:443', 'wild.example.com:443'] }, key: stranger.key });
    assert.equal(other.statusCode, 201, other.body);
  });

  it('refuses the same on update, leaving the edge unchanged', async () => {
    const created = await t.call({ method: 'POST', url: '/edges/tls', body: { hostports: ['mine.example.org:443'] }, key: stranger.key });
    const edge = json<{ id: string }>(created);
    const response = await t.call({ method: 'PATCH', url: `/edges/tls/${edge.id}`, body: { hostports: ['owned.example.com:443'] }, key: stranger.key });
    expectError(response, 400, 'ERR_NGROK_7111');
    const after = json<{ hostports: string[] }>(await t.call({ method: 'GET', url: `/edges/tls/${edge.id}`, key: stranger.key }));
    assert.deepEqual(after.hostports, ['mine.example.org:443']);
  });
});
