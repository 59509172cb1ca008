import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, testDatabaseUrl, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * SPEC §9 and the PostgreSQL deployment: while the database is unreachable, requests get a
 * SPEC-shaped 503 (never a crash or a hang) and /readyz fails; both recover without a restart.
 */
const postgres = process.env.TEST_DATABASE_URL;

describe('PostgreSQL outage', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  let proxy: TcpProxy;
  let t: TestApp;
  before(async () => {
    const target = new URL(postgres!);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const url = new URL(testDatabaseUrl());
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    t = await createTestApp({ DATABASE_URL: url.toString(), DB_STATEMENT_TIMEOUT_MS: '2000' });
  });
  after(async () => {
    await proxy.restore();
    await t.close();
    await proxy.cut();
  });

  it('answers 503 in SPEC shape while the database is gone, and recovers when it returns', async () => {
    const created = json<{ id: string }>(await t.call({ method: 'POST', url: '/credentials', body: { description: 'before' } }));
    assert.equal((await t.call({ method: 'GET', url: '/readyz', key: null, version: false })).statusCode, 200);

    await proxy.cut();
    const started = Date.now();
    // Sessions cached by the API key cache still need the database for the resource itself.
    for (const request of [
      { method: 'GET' as const, url: `/credentials/${created.id}` },
      { method: 'POST' as const, url: '/credentials', body: { description: 'during' } },
      { method: 'GET' as const, url: '/credentials' },
      { method: 'PATCH' as const, url: `/credentials/${created.id}`, body: { description: 'during' } },
    ]) {
      const response = await t.call(request);
      const error = expectError(response, 503, undefined);
      assert.equal(error.msg, 'Internal server error');
      assert.equal(response.headers['retry-after'], '1');
    }
    assert.ok(Date.now() - started < 20_000, 'no request hangs');
    const ready = await t.call({ method: 'GET', url: '/readyz', key: null, version: false });
    assert.equal(ready.statusCode, 503);
    assert.equal((await t.call({ method: 'GET', url: '/healthz', key: null, version: false })).statusCode, 200, 'alive all along');

    await proxy.restore();
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await t.call({ method: 'GET', url: '/readyz', key: null, version: false })).statusCode;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(status, 200, '/readyz recovers without a restart');
    const after = json(await t.call({ method: 'GET', url: `/credentials/${created.id}` }));
    assert.equal(after.description, 'before', 'the failed PATCH changed nothing');
    assert.equal((await t.call({ method: 'POST', url: '/credentials', body: { description: 'after' } })).statusCode, 201);
  });
});
