// Random HTTP-phase policies of served actions and random requests (fast-check), shared by the
// domain property test (test/domain/policy/http-properties.test.ts) and the one through a real
// proxy (test/e2e/http-policy-properties.test.ts).
import fc from 'fast-check';

export const HEADER_NAMES = ['x-a', 'X-B', 'x-secret', 'server', 'cookie', 'authorization'];
const EXPRESSIONS = [
  "req.method == 'GET'",
  "req.url.path.startsWith('/a')",
  "hasReqHeader('x-a')",
  "getReqHeader('x-b').size() > 0",
  "req.url.path.matches('^/[a-z]+$')",
  "'k' in vars && vars.k == 'v'",
  "req.headers['x-a'][0] == 'q'",
  "conn.client_ip != ''",
  "conn.client_port > 0",
  "'x-secret' in req.headers",
];
const VALUES = ['plain', '${req.url.path}', '${conn.client_ip}', '${req.headers["x-a"][0]}', '${vars.k}', 'a${"\\r\\n"}b', '${req.method}'];

/** The statuses a deny or custom-response may be configured with. */
export const CONFIGURED_STATUSES = [403, 404, 410, 200, 418, 503];

function requestAction(answerStatuses: readonly number[]) {
  return fc.oneof(
    fc.record({ type: fc.constant('add-headers'), config: fc.record({ headers: fc.dictionary(fc.constantFrom(...HEADER_NAMES.filter((n) => n !== 'authorization')), fc.constantFrom(...VALUES), { minKeys: 1, maxKeys: 3 }) }) }),
    fc.record({ type: fc.constant('remove-headers'), config: fc.record({ headers: fc.uniqueArray(fc.constantFrom(...HEADER_NAMES), { minLength: 1, maxLength: 3 }) }) }),
    fc.record({ type: fc.constant('set-vars'), config: fc.record({ vars: fc.constant([{ k: 'v' }]) }) }),
    fc.record({ type: fc.constant('log'), config: fc.record({ metadata: fc.record({ v: fc.constantFrom(...VALUES) }) }) }),
    fc.record({ type: fc.constant('url-rewrite'), config: fc.record({ from: fc.constantFrom('/a', '^(.*)$', 'z'), to: fc.constantFrom('/b', '$1/x', '/${vars.k}') }) }),
    fc.record({ type: fc.constant('redirect'), config: fc.record({ from: fc.constantFrom('/q', 'zz'), to: fc.constantFrom('/r', 'https://example.com/${req.url.path}') }) }),
    fc.record({ type: fc.constant('basic-auth'), config: fc.record({ credentials: fc.constant(['user:password1']), enforce: fc.boolean() }) }),
    fc.record({ type: fc.constant('rate-limit'), config: fc.record({ algorithm: fc.constant('sliding_window'), capacity: fc.integer({ min: 1, max: 5 }), rate: fc.constant('60s') }) }),
    fc.record({ type: fc.constant('deny'), config: fc.record({ status_code: fc.constantFrom(...answerStatuses.filter((s) => s >= 400)) }) }),
    fc.record({ type: fc.constant('custom-response'), config: fc.record({ status_code: fc.constantFrom(...answerStatuses), body: fc.constantFrom(...VALUES) }) }),
  );
}

const responseAction = fc.oneof(
  fc.record({ type: fc.constant('add-headers'), config: fc.record({ headers: fc.dictionary(fc.constantFrom('x-a', 'x-c', 'x-secret'), fc.constantFrom(...VALUES), { minKeys: 1, maxKeys: 2 }) }) }),
  fc.record({ type: fc.constant('remove-headers'), config: fc.record({ headers: fc.uniqueArray(fc.constantFrom(...HEADER_NAMES), { minLength: 1, maxLength: 2 }) }) }),
  fc.record({ type: fc.constant('set-vars'), config: fc.record({ vars: fc.constant([{ k: 'w' }]) }) }),
);

function rule<T>(action: fc.Arbitrary<T>) {
  return fc.record({ expressions: fc.subarray(EXPRESSIONS, { maxLength: 2 }), actions: fc.array(action, { minLength: 1, maxLength: 2 }) });
}

/**
 * A policy: random request and response rules, then a last rule in each phase removing one of
 * HEADER_NAMES (`removed`), whatever came before. Nothing follows an answering action in its rule
 * (validation refuses that), so every document is valid.
 */
export function httpPolicyArb(answerStatuses: readonly number[] = CONFIGURED_STATUSES): fc.Arbitrary<{ document: string; removed: string }> {
  return fc
    .record({ requestRules: fc.array(rule(requestAction(answerStatuses)), { maxLength: 5 }), responseRules: fc.array(rule(responseAction), { maxLength: 3 }), removed: fc.constantFrom(...HEADER_NAMES) })
    .map(({ requestRules, responseRules, removed }) => {
      for (const r of requestRules) {
        const end = r.actions.findIndex((a) => a.type === 'deny' || a.type === 'custom-response');
        if (end >= 0) r.actions = r.actions.slice(0, end + 1);
      }
      const last = { actions: [{ type: 'remove-headers', config: { headers: [removed] } }] };
      const document = JSON.stringify({ on_http_request: [...requestRules, last], on_http_response: [...responseRules, last] });
      return { document, removed };
    });
}

const headerValue = fc.string({ maxLength: 12 }).map((v) => v.replace(/[\r\n\0]/g, ''));

/** A request: method, origin-form target (some with bad escapes), header lines named from HEADER_NAMES, Cookie and `extraNames`. */
export function httpRequestArb(extraNames: readonly string[] = []) {
  return fc.record({
    method: fc.constantFrom('GET', 'POST', 'HEAD'),
    target: fc.oneof(fc.constantFrom('/', '/a', '/q?x=1', '/a/b%zz', '//x', '/%E2%82%AC'), fc.string({ maxLength: 10 }).map((s) => `/${encodeURIComponent(s)}`)),
    headers: fc.array(fc.tuple(fc.constantFrom(...HEADER_NAMES, 'Cookie', ...extraNames), headerValue), { maxLength: 6 }),
  });
}
