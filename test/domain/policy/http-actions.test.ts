// @test-pass sqlite
// HTTP-POLICY.md §2: each HTTP action's config, its limits just inside (valid) and just past (refused).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePolicy } from '../../../src/domain/policy/index.js';
import { HTTP_ACTION_LIMITS as L } from '../../../src/domain/policy/limits.js';

function code(phase: string, type: string, config: unknown): string {
  const document = JSON.stringify({ [phase]: [{ actions: [config === undefined ? { type } : { type, config }] }] });
  const result = validatePolicy(document, { endpoint: 'http', subject: 'endpoint' });
  return result.ok ? 'ok' : result.error.code;
}

const req = (type: string, config?: unknown) => code('on_http_request', type, config);
const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, 'v']));
const creds = (n: number) => Array.from({ length: n }, (_, i) => `user${i}:password${i}`);

const cases: Array<[string, () => string, string]> = [
  ['add-headers: at most the limit of headers', () => req('add-headers', { headers: headers(L.headers) }), 'ok'],
  ['add-headers: one past the limit', () => req('add-headers', { headers: headers(L.headers + 1) }), 'ERR_NGROK_2204'],
  ['add-headers: headers required', () => req('add-headers', {}), 'ERR_NGROK_2204'],
  ['add-headers: no config at all', () => req('add-headers'), 'ERR_NGROK_2204'],
  ['add-headers: a bad header name', () => req('add-headers', { headers: { 'x y': 'v' } }), 'ERR_NGROK_2204'],
  ['add-headers: a framing header', () => req('add-headers', { headers: { 'Content-Length': '1' } }), 'ERR_NGROK_2204'],
  ['add-headers: a line break in a value', () => req('add-headers', { headers: { x: 'a\r\nb: c' } }), 'ERR_NGROK_2204'],
  ['add-headers: value just at the byte limit', () => req('add-headers', { headers: { x: 'v'.repeat(L.headerValueBytes) } }), 'ok'],
  ['add-headers: value past the byte limit', () => req('add-headers', { headers: { x: 'v'.repeat(L.headerValueBytes + 1) } }), 'ERR_NGROK_2204'],
  ['add-headers: a bad interpolation', () => req('add-headers', { headers: { x: '${nope.x}' } }), 'ERR_NGROK_2224'],
  ['add-headers: headers as a list', () => req('add-headers', { headers: ['x'] }), 'ERR_NGROK_2203'],
  ['add-headers: unknown key', () => req('add-headers', { headers: { x: 'y' }, extra: 1 }), 'ERR_NGROK_2203'],
  ['remove-headers: a list', () => req('remove-headers', { headers: ['server', 'X-A'] }), 'ok'],
  ['remove-headers: past the limit', () => req('remove-headers', { headers: Object.keys(headers(L.headers + 1)) }), 'ERR_NGROK_2204'],
  ['remove-headers: empty', () => req('remove-headers', { headers: [] }), 'ERR_NGROK_2204'],
  ['custom-response: status 200', () => req('custom-response', { status_code: 200 }), 'ok'],
  ['custom-response: status 599', () => req('custom-response', { status_code: 599 }), 'ok'],
  ['custom-response: status 199', () => req('custom-response', { status_code: 199 }), 'ERR_NGROK_2204'],
  ['custom-response: status 600', () => req('custom-response', { status_code: 600 }), 'ERR_NGROK_2204'],
  ['custom-response: status missing', () => req('custom-response', { body: 'x' }), 'ERR_NGROK_2204'],
  ['custom-response: status as text', () => req('custom-response', { status_code: '200' }), 'ERR_NGROK_2203'],
  ['custom-response: body at the limit', () => req('custom-response', { status_code: 200, body: 'b'.repeat(L.bodyBytes) }), 'ok'],
  ['custom-response: body past the limit', () => req('custom-response', { status_code: 200, body: 'b'.repeat(L.bodyBytes + 1) }), 'ERR_NGROK_2204'],
  ['redirect: to only', () => req('redirect', { to: 'https://example.com/' }), 'ok'],
  ['redirect: 308', () => req('redirect', { to: '/x', status_code: 308 }), 'ok'],
  ['redirect: 300 is no redirect', () => req('redirect', { to: '/x', status_code: 300 }), 'ERR_NGROK_2204'],
  ['redirect: to missing', () => req('redirect', { from: '.*' }), 'ERR_NGROK_2204'],
  ['redirect: from not RE2', () => req('redirect', { from: '(?=x)', to: '/' }), 'ERR_NGROK_2204'],
  ['url-rewrite: from and to', () => req('url-rewrite', { from: '^/a/(.*)', to: '/b/$1' }), 'ok'],
  ['url-rewrite: status_code is not a field', () => req('url-rewrite', { to: '/b', status_code: 302 }), 'ERR_NGROK_2203'],
  ['set-vars: a list of mappings', () => req('set-vars', { vars: [{ a: 'b' }, { c: 1 }] }), 'ok'],
  ['set-vars: at the limit', () => req('set-vars', { vars: [headers(L.vars)].map((h) => Object.fromEntries(Object.keys(h).map((k) => [k.replace('-', '_'), 1]))) }), 'ok'],
  ['set-vars: past the limit', () => req('set-vars', { vars: [headers(L.vars + 1)].map((h) => Object.fromEntries(Object.keys(h).map((k) => [k.replace('-', '_'), 1]))) }), 'ERR_NGROK_2204'],
  ['set-vars: a bad name', () => req('set-vars', { vars: [{ 'a-b': 1 }] }), 'ERR_NGROK_2204'],
  ['set-vars: empty', () => req('set-vars', { vars: [] }), 'ERR_NGROK_2204'],
  ['basic-auth: 10 credentials', () => req('basic-auth', { credentials: creds(L.credentials) }), 'ok'],
  ['basic-auth: 11 credentials', () => req('basic-auth', { credentials: creds(L.credentials + 1) }), 'ERR_NGROK_2204'],
  ['basic-auth: password of 8', () => req('basic-auth', { credentials: ['u:12345678'] }), 'ok'],
  ['basic-auth: password of 7', () => req('basic-auth', { credentials: ['u:1234567'] }), 'ERR_NGROK_2204'],
  ['basic-auth: password of 128', () => req('basic-auth', { credentials: [`u:${'p'.repeat(128)}`] }), 'ok'],
  ['basic-auth: password of 129', () => req('basic-auth', { credentials: [`u:${'p'.repeat(129)}`] }), 'ERR_NGROK_2204'],
  ['basic-auth: no colon', () => req('basic-auth', { credentials: ['nocolonhere'] }), 'ERR_NGROK_2204'],
  ['basic-auth: credentials missing', () => req('basic-auth', { realm: 'x' }), 'ERR_NGROK_2204'],
  ['basic-auth: enforce not a bool', () => req('basic-auth', { credentials: ['u:12345678'], enforce: 'no' }), 'ERR_NGROK_2203'],
  ['rate-limit: the documented example', () => req('rate-limit', { name: 'x', algorithm: 'sliding_window', capacity: 10, rate: '60s', bucket_key: ['${conn.client_ip}'] }), 'ok'],
  ['rate-limit: capacity 0', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 0, rate: '60s' }), 'ERR_NGROK_2204'],
  ['rate-limit: capacity at the limit', () => req('rate-limit', { algorithm: 'sliding_window', capacity: L.capacityMax, rate: '60s' }), 'ok'],
  ['rate-limit: capacity past the limit', () => req('rate-limit', { algorithm: 'sliding_window', capacity: L.capacityMax + 1, rate: '60s' }), 'ERR_NGROK_2204'],
  ['rate-limit: rate 1s', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: '1s' }), 'ok'],
  ['rate-limit: rate 0.5s', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: '0.5s' }), 'ERR_NGROK_2204'],
  ['rate-limit: rate 24h', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: '24h' }), 'ok'],
  ['rate-limit: rate 24h1s', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: '24h0m1s' }), 'ERR_NGROK_2204'],
  ['rate-limit: rate not a duration', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: 'often' }), 'ERR_NGROK_2204'],
  ['rate-limit: another algorithm', () => req('rate-limit', { algorithm: 'token_bucket', capacity: 1, rate: '1s' }), 'ERR_NGROK_2204'],
  ['rate-limit: bucket keys at the limit', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: '1s', bucket_key: Array(L.bucketKeys).fill('${conn.client_ip}') }), 'ok'],
  ['rate-limit: bucket keys past the limit', () => req('rate-limit', { algorithm: 'sliding_window', capacity: 1, rate: '1s', bucket_key: Array(L.bucketKeys + 1).fill('x') }), 'ERR_NGROK_2204'],
  ['deny: status_code in an HTTP phase', () => req('deny', { status_code: 404 }), 'ok'],
  ['deny: status_code 600', () => req('deny', { status_code: 600 }), 'ERR_NGROK_2204'],
  ['deny: status_code in on_tcp_connect', () => code('on_tcp_connect', 'deny', { status_code: 404 }), 'ERR_NGROK_2203'],
  ['custom-response: nothing runs after it', () => {
    const result = validatePolicy(JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 200 } }, { type: 'deny' }] }] }), { endpoint: 'http' });
    return result.ok ? 'ok' : result.error.code;
  }, 'ERR_NGROK_2207'],
  ['compress-response: no config', () => code('on_http_response', 'compress-response', undefined), 'ok'],
  ['compress-response: algorithms', () => code('on_http_response', 'compress-response', { algorithms: ['gzip', 'br', 'deflate'] }), 'ok'],
  ['compress-response: an algorithm twice', () => code('on_http_response', 'compress-response', { algorithms: ['gzip', 'gzip'] }), 'ERR_NGROK_2204'],
  ['compress-response: zstd is not served', () => code('on_http_response', 'compress-response', { algorithms: ['zstd'] }), 'ERR_NGROK_2204'],
  ['compress-response: only in on_http_response', () => req('compress-response'), 'ERR_NGROK_2202'],
  ['circuit-breaker: defaults', () => req('circuit-breaker'), 'ok'],
  ['circuit-breaker: threshold 1', () => req('circuit-breaker', { error_threshold: 1 }), 'ok'],
  ['circuit-breaker: threshold past 1', () => req('circuit-breaker', { error_threshold: 1.01 }), 'ERR_NGROK_2204'],
  ['circuit-breaker: threshold 0', () => req('circuit-breaker', { error_threshold: 0 }), 'ERR_NGROK_2204'],
  ['circuit-breaker: threshold as text', () => req('circuit-breaker', { error_threshold: 'half' }), 'ERR_NGROK_2203'],
  ['circuit-breaker: 128 buckets', () => req('circuit-breaker', { num_buckets: 128 }), 'ok'],
  ['circuit-breaker: 129 buckets', () => req('circuit-breaker', { num_buckets: 129 }), 'ERR_NGROK_2204'],
  ['circuit-breaker: window 1h', () => req('circuit-breaker', { window_duration: '1h' }), 'ok'],
  ['circuit-breaker: window past 1h', () => req('circuit-breaker', { window_duration: '1h0m1s' }), 'ERR_NGROK_2204'],
  ['circuit-breaker: not in the response phase', () => code('on_http_response', 'circuit-breaker', undefined), 'ERR_NGROK_2202'],
  ['response phase: basic-auth belongs to the request phase', () => code('on_http_response', 'basic-auth', { credentials: ['u:12345678'] }), 'ERR_NGROK_2202'],
];

describe('HTTP action configs', () => {
  for (const [name, run, expected] of cases) test(`${name} → ${expected}`, () => assert.equal(run(), expected));

  test('a refused basic-auth credential is never quoted in the message', () => {
    const result = validatePolicy(JSON.stringify({ on_http_request: [{ actions: [{ type: 'basic-auth', config: { credentials: ['admin:short'] } }] }] }), { endpoint: 'http' });
    assert.ok(!result.ok);
    assert.doesNotMatch(result.error.message, /short|admin/);
  });
});
