// HTTP-POLICY.md: random policies of served actions on random requests never throw, never make a
// 5xx of burrow's own, never put a line break in a header, and a header the response phase's
// last rule removes never reaches the client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compilePolicy, evaluateHttpRequest, evaluateHttpResponse, RateBuckets } from '../../../src/domain/policy/index.js';

const NAMES = ['x-a', 'X-B', 'x-secret', 'server', 'cookie', 'authorization'];
const EXPRESSIONS = [
  "req.method == 'GET'",
  "req.url.path.startsWith('/a')",
  "hasReqHeader('x-a')",
  "getReqHeader('x-b').size() > 0",
  "req.url.path.matches('^/[a-z]+$')",
  "'k' in vars && vars.k == 'v'",
  "req.headers['x-a'][0] == 'q'",
  "conn.client_ip != ''",
];
const VALUES = ['plain', '${req.url.path}', '${conn.client_ip}', '${req.headers["x-a"][0]}', '${vars.k}', 'a${"\\r\\n"}b'];

const requestAction = fc.oneof(
  fc.record({ type: fc.constant('add-headers'), config: fc.record({ headers: fc.dictionary(fc.constantFrom(...NAMES.filter((n) => n !== 'authorization')), fc.constantFrom(...VALUES), { minKeys: 1, maxKeys: 3 }) }) }),
  fc.record({ type: fc.constant('remove-headers'), config: fc.record({ headers: fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }) }) }),
  fc.record({ type: fc.constant('set-vars'), config: fc.record({ vars: fc.constant([{ k: 'v' }]) }) }),
  fc.record({ type: fc.constant('log'), config: fc.record({ metadata: fc.record({ v: fc.constantFrom(...VALUES) }) }) }),
  fc.record({ type: fc.constant('url-rewrite'), config: fc.record({ from: fc.constantFrom('/a', '^(.*)$', 'z'), to: fc.constantFrom('/b', '$1/x', '/${vars.k}') }) }),
  fc.record({ type: fc.constant('redirect'), config: fc.record({ from: fc.constantFrom('/q', 'zz'), to: fc.constantFrom('/r', 'https://example.com/${req.url.path}') }) }),
  fc.record({ type: fc.constant('basic-auth'), config: fc.record({ credentials: fc.constant(['user:password1']), enforce: fc.boolean() }) }),
  fc.record({ type: fc.constant('rate-limit'), config: fc.record({ algorithm: fc.constant('sliding_window'), capacity: fc.integer({ min: 1, max: 5 }), rate: fc.constant('60s') }) }),
  fc.record({ type: fc.constant('deny'), config: fc.record({ status_code: fc.constantFrom(403, 404, 410) }) }),
  fc.record({ type: fc.constant('custom-response'), config: fc.record({ status_code: fc.constantFrom(200, 418, 503), body: fc.constantFrom(...VALUES) }) }),
);
const rule = <T>(action: fc.Arbitrary<T>) =>
  fc.record({ expressions: fc.subarray(EXPRESSIONS, { maxLength: 2 }), actions: fc.array(action, { minLength: 1, maxLength: 2 }) });
const responseAction = fc.oneof(
  fc.record({ type: fc.constant('add-headers'), config: fc.record({ headers: fc.dictionary(fc.constantFrom('x-a', 'x-c'), fc.constantFrom(...VALUES), { minKeys: 1, maxKeys: 2 }) }) }),
  fc.record({ type: fc.constant('remove-headers'), config: fc.record({ headers: fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 2 }) }) }),
  fc.record({ type: fc.constant('set-vars'), config: fc.record({ vars: fc.constant([{ k: 'w' }]) }) }),
);
const headerValue = fc.string({ maxLength: 12 }).map((v) => v.replace(/[\r\n\0]/g, ''));
const requestArb = fc.record({
  method: fc.constantFrom('GET', 'POST', 'HEAD'),
  target: fc.oneof(fc.constantFrom('/', '/a', '/q?x=1', '/a/b%zz', '//x', '/%E2%82%AC'), fc.string({ maxLength: 10 }).map((s) => `/${encodeURIComponent(s)}`)),
  headers: fc.array(fc.tuple(fc.constantFrom(...NAMES, 'Host', 'Cookie'), headerValue), { maxLength: 6 }),
});

test('random policies on random requests keep the HTTP phases’ guarantees', () => {
  fc.assert(
    fc.property(fc.array(rule(requestAction), { maxLength: 5 }), fc.array(rule(responseAction), { maxLength: 3 }), fc.constantFrom(...NAMES), requestArb, fc.integer({ min: 200, max: 599 }), (requestRules, responseRules, removed, req, status) => {
      // nothing may follow an answering action in its rule: keep such rules valid by construction
      for (const r of requestRules) {
        const end = r.actions.findIndex((a) => a.type === 'deny' || a.type === 'custom-response');
        if (end >= 0) r.actions = r.actions.slice(0, end + 1);
      }
      const document = JSON.stringify({
        on_http_request: requestRules,
        on_http_response: [...responseRules, { actions: [{ type: 'remove-headers', config: { headers: [removed] } }] }],
      });
      const compiled = compilePolicy(document, { endpoint: 'https', maxRules: 100 });
      assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
      const configured = new Set([403, 404, 410, 200, 418, 503]);
      const context = {
        connection: { clientIp: '198.51.100.4', clientPort: 4000, serverIp: '127.0.0.1', serverPort: 443, region: 'x', startedAt: 0, endpoint: { host: 'h' }, now: 1_000 },
        request: { ...req, version: '1.1', scheme: 'https' as const, headers: req.headers.flat(), receivedAt: 0 },
        buckets: new RateBuckets(),
      };
      const decision = evaluateHttpRequest(compiled.program, context);
      if (decision.answer) {
        const s = decision.answer.status;
        assert.ok(configured.has(s) || s === 401 || s === 429 || (s >= 300 && s < 400), `status ${s}`);
      }
      for (const value of decision.headers) assert.doesNotMatch(value, /[\r\n\0]/);
      const response = evaluateHttpResponse(compiled.program, context, decision, { status, headers: ['Server', 'x', removed, 'leak', 'X-A', 'a'] }, decision.vars);
      for (let i = 0; i < response.headers.length; i += 2) assert.notEqual(response.headers[i]!.toLowerCase(), removed.toLowerCase());
      for (const value of response.headers) assert.doesNotMatch(value, /[\r\n\0]/);
      assert.equal(response.answer, undefined);
    }),
    { numRuns: 300 },
  );
});
