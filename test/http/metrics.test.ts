import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1000' });
});
after(() => t.close());

const scrape = async () => {
  const response = await t.call({ method: 'GET', url: '/metrics', key: null, version: false });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return response.body;
};

/** The value of one sample line, e.g. `name{a="b"} 3`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.lastIndexOf('}'));
    const found = Object.fromEntries([...body.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('/metrics', () => {
  it('is Prometheus text with requests by route template and status, latency, errors by code, queries and process metrics', async () => {
    const created = json<{ id: string; token: string }>(await t.call({ method: 'POST', url: '/credentials', body: { description: 'm' } }));
    await t.call({ method: 'GET', url: `/credentials/${created.id}` });
    await t.call({ method: 'GET', url: '/credentials/cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ' });
    await t.call({ method: 'POST', url: '/credentials', body: { acl: ['nope'] } });
    await t.call({ method: 'GET', url: '/credentials', key: null });
    await t.call({ method: 'GET', url: '/no/such/thing' });
    const text = await scrape();

    assert.equal(sample(text, 'burrow_http_requests_total', { route: '/credentials', method: 'POST', status: '201' }), 1);
    assert.equal(sample(text, 'burrow_http_requests_total', { route: '/credentials/:id', method: 'GET', status: '200' }), 1);
    assert.equal(sample(text, 'burrow_http_requests_total', { route: '/credentials/:id', method: 'GET', status: '404' }), 1);
    assert.equal(sample(text, 'burrow_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }), 1);
    assert.equal(sample(text, 'burrow_http_errors_total', { status: '400', error_code: 'ERR_NGROK_600' }), 1);
    assert.equal(sample(text, 'burrow_http_errors_total', { status: '401', error_code: 'ERR_NGROK_200' }), 1);
    assert.equal(sample(text, 'burrow_http_errors_total', { status: '404', error_code: 'none' }), 2);
    assert.ok(sample(text, 'burrow_http_request_duration_seconds_count', { route: '/credentials', method: 'POST' })! >= 2);
    assert.ok(sample(text, 'burrow_db_query_duration_seconds_count', { dialect: t.store.dialect, kind: 'insert', outcome: 'ok' })! >= 1);
    assert.ok(sample(text, 'burrow_db_query_duration_seconds_count', { dialect: t.store.dialect, kind: 'select', outcome: 'ok' })! >= 1);
    assert.match(text, /^process_cpu_user_seconds_total /m);
    assert.match(text, /^nodejs_heap_size_used_bytes /m);

    assert.ok(!text.includes(created.id), 'no id in any label');
    assert.ok(!text.includes(created.token) && !text.includes(t.admin.key), 'no secret');
    assert.ok(!/cr_[0-9A-Za-z]{27}|[0-9A-Za-z]{27}_[0-9A-Za-z]{20}/.test(text));
  });

  it('needs neither an API key nor a version header and is not rate limited', async () => {
    for (let i = 0; i < 3; i++) await scrape();
  });
});
