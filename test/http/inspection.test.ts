import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.js';
import { InspectionRecorder, type Exchange } from '../../src/domain/inspection/recorder.js';
import type { InspectionSettings } from '../../src/domain/inspection/types.js';
import { SqlInspectionRepository } from '../../src/storage/repositories/inspection.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

interface Captured {
  id: string;
  uri: string;
  method: string;
  path: string;
  status: number;
  client_ip: string;
  request_headers: Record<string, string[]>;
  response_headers: Record<string, string[]>;
  actions: string[];
  request_body?: { data: string; length: number; truncated: boolean };
  response_body?: { data: string; length: number; truncated: boolean };
}

interface Listed {
  requests: Captured[];
  uri: string;
  next_page_uri: string | null;
}

const KEEP = 5;
let t: TestApp;
let recorder: InspectionRecorder;
before(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://api.example.com' });
  recorder = new InspectionRecorder(new SqlInspectionRepository(t.store), KEEP);
});
after(async () => {
  await recorder.close();
  await t.close();
});

function exchange(endpointId: string, overrides: Partial<Exchange> = {}): Exchange {
  return {
    accountId: t.admin.principal.accountId,
    endpointId,
    method: 'POST',
    path: '/hook?x=1',
    status: 201,
    durationMs: 12.5,
    clientIp: '198.51.100.7',
    requestHeaders: [
      ['Host', 'app.example.com'],
      ['Authorization', 'Bearer secret-value'],
      ['X-Trace', 'a'],
      ['x-trace', 'b'],
    ],
    responseHeaders: [['Set-Cookie', 'session=abc']],
    actions: ['add-headers'],
    requestBody: { head: Buffer.from('0123456789'), length: 10 },
    responseBody: { head: Buffer.from('ok'), length: 2 },
    ...overrides,
  };
}

const settings = (changes: Partial<InspectionSettings> = {}): InspectionSettings => ({ capture: 'bodies', bodyLimitBytes: 4, redactSecrets: true, ...changes });
const list = async (endpointId: string, query = '') => json<Listed>(await t.call({ method: 'GET', url: `/endpoints/${endpointId}/requests${query}` }));

describe('GET / PATCH /traffic_inspection', () => {
  it('defaults to off, 65536, redacted; PATCH changes only the given fields', async () => {
    assert.deepEqual(json(await t.call({ method: 'GET', url: '/traffic_inspection' })), { capture: 'off', body_limit_bytes: 65536, redact_secrets: true });
    const changed = json(await t.call({ method: 'PATCH', url: '/traffic_inspection', body: { capture: 'heads', redact_secrets: null } }));
    assert.deepEqual(changed, { capture: 'heads', body_limit_bytes: 65536, redact_secrets: true });
    assert.deepEqual(json(await t.call({ method: 'GET', url: '/traffic_inspection' })), changed);
  });

  it('answers a bad value 215 naming the field, and changes nothing', async () => {
    const before = json(await t.call({ method: 'GET', url: '/traffic_inspection' }));
    const bad: [string, unknown][] = [['capture', 'all'], ['body_limit_bytes', -1], ['body_limit_bytes', 1_048_577], ['body_limit_bytes', 1.5], ['redact_secrets', 'yes']];
    for (const [field, value] of bad) {
      const body = expectError(await t.call({ method: 'PATCH', url: '/traffic_inspection', body: { [field]: value } }), 400, 'ERR_NGROK_215');
      assert.equal((body.details as Record<string, string>).param, field);
    }
    expectError(await t.call({ method: 'PATCH', url: '/traffic_inspection', body: { keep: 5 } }), 400, 'ERR_NGROK_214');
    assert.deepEqual(json(await t.call({ method: 'GET', url: '/traffic_inspection' })), before);
  });

  it('is per account', async () => {
    const stranger = await t.newCaller({ newAccount: true, admin: true });
    await t.call({ method: 'PATCH', url: '/traffic_inspection', body: { capture: 'bodies' } });
    assert.equal(json<{ capture: string }>(await t.call({ method: 'GET', url: '/traffic_inspection', key: stranger.key })).capture, 'off');
  });
});

describe('captured requests', () => {
  it('are listed within 2 s, with secrets redacted and bodies cut at the limit', async () => {
    const endpoint = newId('ep').id;
    recorder.record(exchange(endpoint), settings());
    const started = Date.now();
    let page = await list(endpoint).catch(() => undefined);
    while (!page?.requests?.length && Date.now() - started < 2000) {
      await sleep(50);
      page = await list(endpoint).catch(() => undefined);
    }
    const [item] = page!.requests;
    assert.ok(item, 'listed within 2 s');
    assert.match(item.id, /^req_[0-9A-Za-z]{27}$/);
    assert.equal(item.uri, `https://api.example.com/endpoints/${endpoint}/requests/${item.id}`);
    assert.equal(item.path, '/hook?x=1');
    assert.equal(item.client_ip, '198.51.100.7');
    assert.deepEqual(item.request_headers, { host: ['app.example.com'], authorization: ['[REDACTED]'], 'x-trace': ['a', 'b'] });
    assert.deepEqual(item.response_headers, { 'set-cookie': ['[REDACTED]'] });
    assert.deepEqual(item.actions, ['add-headers']);
    assert.deepEqual(item.request_body, { data: Buffer.from('0123').toString('base64'), length: 10, truncated: true });
    assert.deepEqual(item.response_body, { data: Buffer.from('ok').toString('base64'), length: 2, truncated: false });
    assert.deepEqual(json(await t.call({ method: 'GET', url: `/endpoints/${endpoint}/requests/${item.id}` })), item);
  });

  it('heads leaves bodies out; redact_secrets false keeps values; off records nothing', async () => {
    const endpoint = newId('ep').id;
    recorder.record(exchange(endpoint, { path: '/heads' }), settings({ capture: 'heads', redactSecrets: false }));
    recorder.record(exchange(endpoint, { path: '/off' }), settings({ capture: 'off' }));
    await recorder.flush();
    const { requests } = await list(endpoint);
    assert.deepEqual(requests.map((r) => r.path), ['/heads']);
    assert.ok(!('request_body' in requests[0]!) && !('response_body' in requests[0]!));
    assert.deepEqual(requests[0]!.request_headers.authorization, ['Bearer secret-value']);
  });

  it('keeps the newest INSPECTION_KEEP per endpoint, pages newest first', async () => {
    const endpoint = newId('ep').id;
    const other = newId('ep').id;
    for (let i = 0; i < KEEP + 3; i++) recorder.record(exchange(endpoint, { path: `/${i}` }), settings());
    recorder.record(exchange(other), settings());
    await recorder.flush();
    const all = await list(endpoint);
    assert.deepEqual(all.requests.map((r) => r.path), ['/7', '/6', '/5', '/4', '/3']);
    assert.equal((await list(other)).requests.length, 1, 'another endpoint is not trimmed by this one');
    const first = await list(endpoint, '?limit=2');
    assert.equal(first.next_page_uri, `https://api.example.com/endpoints/${endpoint}/requests?before_id=${first.requests[1]!.id}&limit=2`);
    const second = await list(endpoint, `?limit=2&before_id=${first.requests[1]!.id}`);
    assert.deepEqual(second.requests.map((r) => r.path), ['/5', '/4']);
    expectError(await t.call({ method: 'GET', url: `/endpoints/${endpoint}/requests?before_id=ep_x` }), 400, 'ERR_NGROK_227');
  });

  it('another account’s endpoint and requests are 404, as unknown ones', async () => {
    const endpoint = newId('ep').id;
    recorder.record(exchange(endpoint), settings());
    await recorder.flush();
    const [item] = (await list(endpoint)).requests;
    const stranger = await t.newCaller({ newAccount: true, admin: true });
    expectError(await t.call({ method: 'GET', url: `/endpoints/${endpoint}/requests`, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: `/endpoints/${endpoint}/requests/${item!.id}`, key: stranger.key }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: `/endpoints/${newId('ep').id}/requests` }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: `/endpoints/${endpoint}/requests/req_nope` }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: '/endpoints/cr_x/requests' }), 404, undefined);
  });

  it('settingsFor never waits: off until the first read answers, then the account’s settings', async () => {
    const fresh = new InspectionRecorder(new SqlInspectionRepository(t.store), KEEP);
    await t.call({ method: 'PATCH', url: '/traffic_inspection', body: { capture: 'heads' } });
    assert.equal(fresh.settingsFor(t.admin.principal.accountId).capture, 'off');
    await sleep(100);
    assert.equal(fresh.settingsFor(t.admin.principal.accountId).capture, 'heads');
    await fresh.close();
  });
});
