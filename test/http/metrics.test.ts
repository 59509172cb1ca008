import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { parseExposition } from '../helpers/exposition.js';

const RATE_LIMIT = 3;
let t: TestApp;
let limited: TestApp;
before(async () => {
  t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1000' });
  limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) });
});
after(async () => {
  await t.close();
  await limited.close();
});

/** A scrape in the Prometheus text format, checked strictly. */
const scrape = async (accept?: string, app = t) => {
  const response = await app.call({ method: 'GET', url: '/metrics', key: null, version: false, headers: accept ? { accept } : {} });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  parseExposition(response.body, 'prometheus');
  return response.body;
};

/** A scrape in OpenMetrics 1.0, checked strictly. */
const scrapeOpenMetrics = async (accept: string) => {
  const response = await t.call({ method: 'GET', url: '/metrics', key: null, version: false, headers: { accept } });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['content-type'], 'application/openmetrics-text; version=1.0.0; charset=utf-8');
  return { text: response.body, families: parseExposition(response.body, 'openmetrics') };
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
  // First in this file, and each test file runs in its own process: this is the process's first scrape.
  it('is valid Prometheus text on the very first scrape (no Nan, no duplicate series)', async () => {
    const text = await scrape();
    assert.doesNotMatch(text, /\bNan\b/);
    assert.match(text, /^nodejs_eventloop_lag_seconds /m);
  });

  it('is Prometheus text with requests by route template and status, latency, errors by code, queries and process metrics', async () => {
    const created = json<{ id: string; token: string }>(await t.call({ method: 'POST', url: '/credentials', body: { description: 'm' } }));
    await t.call({ method: 'GET', url: `/credentials/${created.id}` });
    await t.call({ method: 'GET', url: '/credentials/cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ' });
    await t.call({ method: 'POST', url: '/credentials', body: { acl: ['nope'] } });
    await t.call({ method: 'GET', url: '/credentials', key: null });
    await t.call({ method: 'GET', url: '/no/such/thing' });
    await t.call({ method: 'HEAD', url: '/credentials' });
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
    // The limiter is live on this app: an account's calls past the limit get 429 …
    const statuses: number[] = [];
    for (let i = 0; i <= RATE_LIMIT; i++) statuses.push((await limited.call({ method: 'GET', url: '/credentials' })).statusCode);
    assert.deepEqual(statuses, [...Array<number>(RATE_LIMIT).fill(200), 429]);
    // … while scrapes, with or without that account's key, are never counted.
    for (let i = 0; i < RATE_LIMIT * 3; i++) await scrape(undefined, limited);
    for (let i = 0; i < RATE_LIMIT * 2; i++) {
      const response = await limited.call({ method: 'GET', url: '/metrics', version: false });
      assert.equal(response.statusCode, 200, `scrape ${i + 1} with an exhausted key`);
    }
  });

  it('answers OpenMetrics 1.0 when Accept asks for it, Prometheus text otherwise', async () => {
    await t.call({ method: 'GET', url: '/no/such/thing' });
    // What a Prometheus server sends when it prefers OpenMetrics.
    const { text, families } = await scrapeOpenMetrics(
      'application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2',
    );
    assert.ok(text.endsWith('# EOF\n'));
    assert.equal(families.get('burrow_http_requests')?.type, 'counter');
    assert.ok(families.get('burrow_http_requests')!.samples.every((item) => item.name === 'burrow_http_requests_total'));
    assert.equal(families.get('process_cpu_user_seconds')?.type, 'counter');
    assert.equal(families.get('burrow_http_request_duration_seconds')?.type, 'histogram');
    await scrapeOpenMetrics('application/openmetrics-text');

    await scrape(); // no Accept
    await scrape('text/plain');
    await scrape('*/*');
    await scrape('text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.1');
    await scrape('application/json'); // nothing better to offer: the default
  });
});
