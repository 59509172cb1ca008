// @test-pass sqlite
// HTTP-POLICY.md §1–§2: the HTTP phases' variables and actions, evaluated on crafted requests.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compilePolicy,
  evaluateHttpRequest,
  evaluateHttpResponse,
  RateBuckets,
  CircuitBreakers,
  recordAnswer,
  type HttpPolicyContext,
  type PolicyHttpRequest,
  type PolicyProgram,
} from '../../../src/domain/policy/index.js';
import { httpsConnection } from '../../helpers/policy.js';

const NOW = Date.parse('2026-01-02T03:04:05Z');
const CONNECTION = httpsConnection('app.example.com', NOW);
const REQUEST: PolicyHttpRequest = {
  method: 'POST',
  target: '/api/v1/items?q=a%20b&q=c&empty=',
  version: '1.1',
  scheme: 'https',
  headers: [
    'Host', 'app.example.com',
    'User-Agent', 'curl/8.0',
    'X-Multi', 'one',
    'x-multi', 'two',
    'Content-Type', 'application/json; charset=utf-8',
    'Content-Length', '12',
    'Content-Encoding', 'gzip, br',
    'Cookie', 'session=abc; theme="dark"',
    'Authorization', `Basic ${Buffer.from('alice:correct horse').toString('base64')}`,
  ],
  receivedAt: NOW - 5,
};

function program(document: string): PolicyProgram {
  const compiled = compilePolicy(document, { endpoint: 'https', subject: 'endpoint' });
  assert.ok(compiled.ok, compiled.ok ? '' : `${compiled.error.code}: ${compiled.error.message}`);
  return compiled.program;
}

function context(overrides: Partial<PolicyHttpRequest> = {}, buckets = new RateBuckets()): HttpPolicyContext {
  return { connection: CONNECTION, request: { ...REQUEST, ...overrides }, buckets };
}

function header(lines: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 2) if (lines[i]!.toLowerCase() === name) out.push(lines[i + 1]!);
  return out;
}

describe('on_http_request variables of a crafted request', () => {
  const cases: Array<[string, string]> = [
    ['req.method', 'POST'],
    ['req.version', 'HTTP/1.1'],
    ['req.host', 'app.example.com'],
    ['req.user_agent', 'curl/8.0'],
    ['req.content_type', 'application/json'],
    ['req.content_length', '12'],
    ['req.content_encoding', '["gzip","br"]'],
    ["req.headers['x-multi']", '["one","two"]'],
    ["req.cookies['theme'][0].value", 'dark'],
    ["req.cookies['session'][0].name", 'session'],
    ['req.url.path', '/api/v1/items'],
    ['req.url.raw_path', '/api/v1/items'],
    ['req.url.query', 'q=a%20b&q=c&empty='],
    ["req.url.query_params['q']", '["a b","c"]'],
    ['req.url.scheme', 'https'],
    ['req.url.host', 'app.example.com'],
    ['req.url.authority', 'app.example.com'],
    ['req.url.port', '0'],
    ['req.url.raw', 'https://app.example.com/api/v1/items?q=a%20b&q=c&empty='],
    ['req.ts.header_received', '2026-01-02T03:04:04.995Z'],
    ['size(req.trailers)', '0'],
    ['conn.client_ip', '203.0.113.7'],
    ['conn.client_port', '50123'],
    ['endpoint.host', 'app.example.com'],
    ['time.now', '2026-01-02T03:04:05Z'],
    ["getReqHeader('X-MULTI')", '["one","two"]'],
    ["hasReqHeader('x-absent')", 'false'],
    ["getQueryParam('q')", '["a b","c"]'],
    ["hasQueryParam('empty')", 'true'],
    ["getReqCookie('session')[0].value", 'abc'],
    ["hasReqCookie('nope')", 'false'],
  ];
  for (const [expression, expected] of cases) {
    test(`${expression} = ${expected}`, () => {
      const p = program(`on_http_request:\n  - actions:\n      - type: log\n        config: {metadata: {v: "\${${expression.replaceAll('"', '\\"')}}"}}\n`);
      const decision = evaluateHttpRequest(p, context());
      assert.deepEqual(decision.errors, []);
      assert.equal(decision.logs[0]!.v, expected);
    });
  }
});

describe('on_http_request actions', () => {
  test('add-headers and remove-headers edit what reaches the agent; later rules see the edit', () => {
    const p = program(`on_http_request:
  - actions:
      - type: remove-headers
        config: {headers: [x-multi, Authorization]}
      - type: add-headers
        config: {headers: {x-client: "\${conn.client_ip}", x-path: "\${req.url.path}"}}
  - expressions: ["hasReqHeader('x-client') && !hasReqHeader('x-multi')"]
    actions:
      - type: add-headers
        config: {headers: {x-seen: "yes"}}
`);
    const decision = evaluateHttpRequest(p, context());
    assert.equal(decision.answer, undefined);
    assert.deepEqual(header(decision.headers, 'x-multi'), []);
    assert.deepEqual(header(decision.headers, 'authorization'), []);
    assert.deepEqual(header(decision.headers, 'x-client'), ['203.0.113.7']);
    assert.deepEqual(header(decision.headers, 'x-path'), ['/api/v1/items']);
    assert.deepEqual(header(decision.headers, 'x-seen'), ['yes']);
    assert.deepEqual(decision.taken.map((t) => `${t.phase}:${t.rule}:${t.type}`), [
      'on_http_request:1:remove-headers',
      'on_http_request:1:add-headers',
      'on_http_request:2:add-headers',
    ]);
  });

  test('deny answers 403 (or its status_code) and ends the phase; rule order holds', () => {
    const p = program(`on_http_request:
  - expressions: ["req.method == 'GET'"]
    actions: [{type: deny}]
  - expressions: ["req.url.path.startsWith('/api')"]
    actions: [{type: deny, config: {status_code: 404}}]
  - actions: [{type: add-headers, config: {headers: {x-never: "1"}}}]
`);
    const decision = evaluateHttpRequest(p, context());
    assert.equal(decision.answer?.status, 404);
    assert.deepEqual(header(decision.headers, 'x-never'), []);
    assert.equal(evaluateHttpRequest(p, context({ method: 'GET' })).answer?.status, 403);
    assert.equal(evaluateHttpRequest(p, context({ method: 'PUT', target: '/other' })).answer, undefined);
  });

  test('custom-response interpolates its body and headers', () => {
    const p = program(`on_http_request:
  - actions:
      - type: custom-response
        config: {status_code: 418, body: "hello \${conn.client_ip} \${req.method}", headers: {content-type: text/plain, x-id: "\${endpoint.id}"}}
`);
    const answer = evaluateHttpRequest(p, context()).answer!;
    assert.equal(answer.status, 418);
    assert.equal(answer.body, 'hello 203.0.113.7 POST');
    assert.deepEqual(header(answer.headers, 'x-id'), ['ep_1']);
  });

  test('redirect: from/to with capture groups, default 302, no match passes on', () => {
    const p = program(`on_http_request:
  - actions:
      - type: redirect
        config: {from: "^https://app.example.com/api/v1/(.*)$", to: "https://new.example.com/v2/$1"}
`);
    const answer = evaluateHttpRequest(p, context()).answer!;
    assert.equal(answer.status, 302);
    assert.deepEqual(header(answer.headers, 'location'), ['https://new.example.com/v2/items?q=a%20b&q=c&empty=']);
    assert.equal(evaluateHttpRequest(p, context({ target: '/other' })).answer, undefined);
    const fixed = program('on_http_request:\n  - actions: [{type: redirect, config: {to: "https://example.com/", status_code: 308}}]\n');
    assert.equal(evaluateHttpRequest(fixed, context()).answer?.status, 308);
  });

  test('url-rewrite changes the target the agent gets, and req.url for later rules', () => {
    const p = program(`on_http_request:
  - actions:
      - type: url-rewrite
        config: {from: "/api/v1/", to: "/internal/"}
  - expressions: ["req.url.path == '/internal/items'"]
    actions: [{type: add-headers, config: {headers: {x-rewritten: "\${actions.ngrok.url_rewrite.url}"}}}]
`);
    const decision = evaluateHttpRequest(p, context());
    assert.equal(decision.target, '/internal/items?q=a%20b&q=c&empty=');
    assert.deepEqual(header(decision.headers, 'x-rewritten'), ['https://app.example.com/internal/items?q=a%20b&q=c&empty=']);
  });

  test('set-vars values are seen by later rules and carried to the response phase', () => {
    const p = program(`on_http_request:
  - actions: [{type: set-vars, config: {vars: [{stage: beta, n: 3}, {who: "\${conn.client_ip}"}]}}]
  - expressions: ["vars.stage == 'beta' && vars.n == 3"]
    actions: [{type: add-headers, config: {headers: {x-stage: "\${vars.stage}-\${vars.who}"}}}]
on_http_response:
  - expressions: ["vars.stage == 'beta'"]
    actions: [{type: add-headers, config: {headers: {x-stage: "\${vars.stage}"}}}]
`);
    const decision = evaluateHttpRequest(p, context());
    assert.deepEqual(header(decision.headers, 'x-stage'), ['beta-203.0.113.7']);
    const response = evaluateHttpResponse(p, context(), decision, { status: 200, headers: ['Content-Type', 'text/plain'] }, decision.vars);
    assert.deepEqual(header(response.headers, 'x-stage'), ['beta']);
  });

  test('basic-auth: a matching credential passes, others get 401 with the realm; enforce false only records', () => {
    const p = program(`on_http_request:
  - actions:
      - type: basic-auth
        config: {realm: "Staff", credentials: ["bob:12345678", "alice:correct horse"]}
      - type: add-headers
        config: {headers: {x-user: "\${actions.ngrok.basic_auth.credentials.username}"}}
`);
    const ok = evaluateHttpRequest(p, context());
    assert.equal(ok.answer, undefined);
    assert.deepEqual(header(ok.headers, 'x-user'), ['alice']);
    for (const authorization of [`Basic ${Buffer.from('alice:wrong horse').toString('base64')}`, 'Bearer x', undefined]) {
      const headers = REQUEST.headers.filter((_, i, all) => all[i - (i % 2)]!.toLowerCase() !== 'authorization');
      const denied = evaluateHttpRequest(p, context({ headers: authorization ? [...headers, 'Authorization', authorization] : headers }));
      assert.equal(denied.answer?.status, 401, authorization);
      assert.deepEqual(header(denied.answer!.headers, 'www-authenticate'), ['Basic realm="Staff"']);
    }
    const lenient = program('on_http_request:\n  - actions: [{type: basic-auth, config: {enforce: false, credentials: ["bob:12345678"]}}]\n');
    assert.equal(evaluateHttpRequest(lenient, context()).answer, undefined);
  });

  test('rate-limit: capacity per bucket key, then 429 with Retry-After; buckets are per key', () => {
    const p = program(`on_http_request:
  - actions:
      - type: rate-limit
        config: {name: per-ip, algorithm: sliding_window, capacity: 2, rate: 60s, bucket_key: ["\${conn.client_ip}"]}
`);
    const buckets = new RateBuckets();
    assert.equal(evaluateHttpRequest(p, context({}, buckets)).answer, undefined);
    assert.equal(evaluateHttpRequest(p, context({}, buckets)).answer, undefined);
    const limited = evaluateHttpRequest(p, context({}, buckets)).answer!;
    assert.equal(limited.status, 429);
    const retry = Number(header(limited.headers, 'retry-after')[0]);
    assert.ok(retry >= 1 && retry <= 120, String(retry));
    const other = { ...context({}, buckets), connection: { ...CONNECTION, clientIp: '198.51.100.1' } };
    assert.equal(evaluateHttpRequest(p, other).answer, undefined);
    // a later window lets requests through again
    const later = { ...context({}, buckets), connection: { ...CONNECTION, now: NOW + 180_000 } };
    assert.equal(evaluateHttpRequest(p, later).answer, undefined);
  });

  test('restrict-ips in the request phase answers 403', () => {
    const p = program('on_http_request:\n  - actions: [{type: restrict-ips, config: {deny: ["203.0.113.0/24"]}}]\n');
    assert.equal(evaluateHttpRequest(p, context()).answer?.status, 403);
  });

  test('a run-time error counts as false and is reported, never thrown', () => {
    const p = program(`on_http_request:
  - expressions: ["req.headers['absent'][0] == 'x'"]
    actions: [{type: deny}]
`);
    const decision = evaluateHttpRequest(p, context());
    assert.equal(decision.answer, undefined);
    assert.equal(decision.errors.length, 1);
    assert.match(decision.errors[0]!.message, /absent/);
  });
});

describe('on_http_response actions', () => {
  test('headers edited on the answer; res.* describes it; custom-response replaces it', () => {
    const p = program(`on_http_response:
  - actions:
      - type: remove-headers
        config: {headers: [server]}
      - type: add-headers
        config: {headers: {x-status: "\${res.status_code}", x-type: "\${res.content_type}"}}
  - expressions: ["res.status_code >= 500"]
    actions:
      - type: custom-response
        config: {status_code: 503, body: "sorry"}
`);
    const fine = evaluateHttpResponse(p, context(), { headers: REQUEST.headers, target: REQUEST.target }, { status: 200, headers: ['Server', 'local', 'Content-Type', 'text/html; charset=utf-8'] }, new Map());
    assert.equal(fine.answer, undefined);
    assert.deepEqual(header(fine.headers, 'server'), []);
    assert.deepEqual(header(fine.headers, 'x-status'), ['200']);
    assert.deepEqual(header(fine.headers, 'x-type'), ['text/html']);
    const failed = evaluateHttpResponse(p, context(), { headers: REQUEST.headers, target: REQUEST.target }, { status: 502, headers: ['Server', 'local'] }, new Map());
    assert.equal(failed.answer?.status, 503);
    assert.equal(failed.answer?.body, 'sorry');
  });
});

describe('header values an action writes', () => {
  test('a decoded path past Latin-1 goes out as its UTF-8 bytes; control characters become spaces', () => {
    const p = program(`on_http_response:
  - actions:
      - type: add-headers
        config: {headers: {x-path: "\${req.url.path}", x-vars: "a\\u0001b"}}
`);
    const answer = evaluateHttpResponse(p, context({ target: '/caf%C3%A9/%E2%82%AC' }), { headers: REQUEST.headers, target: '/caf%C3%A9/%E2%82%AC' }, { status: 200, headers: [] }, new Map());
    const [path] = header(answer.headers, 'x-path');
    assert.equal(Buffer.from(path!, 'latin1').toString('utf8'), '/café/€');
    assert.doesNotMatch(path!, /[^\t\x20-\x7e\x80-\xff]/);
    assert.deepEqual(header(answer.headers, 'x-vars'), ['a b']);
  });
});

describe('compress-response', () => {
  const p = program('on_http_response:\n  - actions: [{type: compress-response, config: {algorithms: [gzip, br]}}]\n');
  const run = (acceptEncoding: string | undefined, answerHeaders: string[], method = 'GET', status = 200) => {
    const request = { headers: [...REQUEST.headers, ...(acceptEncoding === undefined ? [] : ['Accept-Encoding', acceptEncoding])], method };
    return evaluateHttpResponse(p, context(request), { headers: request.headers, target: '/' }, { status, headers: answerHeaders }, new Map());
  };
  const cases: Array<[string, string | undefined, string[], string | undefined, string?, number?]> = [
    ['gzip asked', 'gzip', ['Content-Type', 'text/plain'], 'gzip'],
    ['the client’s q-values decide', 'gzip;q=0.4, br;q=0.9', [], 'br'],
    ['a tie goes to the action’s order', 'br, gzip', [], 'gzip'],
    ['* counts for the rest', '*;q=0.5', [], 'gzip'],
    ['q=0 refuses', 'gzip;q=0, br;q=0', [], undefined],
    ['nothing asked', undefined, [], undefined],
    ['only deflate asked, not offered', 'deflate', [], undefined],
    ['already encoded', 'gzip', ['Content-Encoding', 'br'], undefined],
    ['a tiny body of known length', 'gzip', ['Content-Length', '1023'], undefined],
    ['a body just large enough', 'gzip', ['Content-Length', '1024'], 'gzip'],
    ['HEAD', 'gzip', [], undefined, 'HEAD'],
    ['304', 'gzip', [], undefined, 'GET', 304],
  ];
  for (const [name, accept, headers, expected, method, status] of cases) {
    test(`${name} → ${expected ?? 'not compressed'}`, () => {
      const decision = run(accept, headers, method, status);
      assert.equal(decision.compress, expected);
      if (expected) {
        assert.deepEqual(header(decision.headers, 'content-encoding'), [expected]);
        assert.deepEqual(header(decision.headers, 'content-length'), []);
        assert.deepEqual(header(decision.headers, 'vary'), ['Accept-Encoding']);
      }
    });
  }

  test('an existing Vary naming Accept-Encoding is kept as it is', () => {
    const decision = run('gzip', ['Vary', 'Origin, Accept-Encoding']);
    assert.deepEqual(header(decision.headers, 'vary'), ['Origin, Accept-Encoding']);
  });
});

describe('circuit-breaker', () => {
  test('trips at the error share once the volume is reached, answers 503 while open, closes after tripped_duration', () => {
    const p = program('on_http_request:\n  - actions: [{type: circuit-breaker, config: {error_threshold: 0.5, volume_threshold: 4, window_duration: 10s, tripped_duration: 30s}}]\n');
    const breakers = new CircuitBreakers();
    const at = (ms: number) => ({ ...context(), breakers, connection: { ...CONNECTION, now: NOW + ms } });
    const answer = (ms: number, status: number) => {
      const ctx = at(ms);
      const decision = evaluateHttpRequest(p, ctx);
      if (decision.answer) return decision.answer.status;
      recordAnswer(ctx, decision, status, NOW + ms);
      return status;
    };
    assert.equal(answer(0, 200), 200);
    assert.equal(answer(100, 500), 500);
    assert.equal(answer(200, 500), 500); // 2 of 3: volume not reached yet
    assert.equal(answer(300, 200), 200); // 2 of 4 = 0.5: trips
    assert.equal(answer(400, 200), 503);
    assert.equal(answer(30_299, 200), 503);
    assert.equal(answer(30_301, 200), 200);
    // failures older than the window no longer count
    const fresh = new CircuitBreakers();
    const late = (ms: number, status: number) => {
      const ctx = { ...at(ms), breakers: fresh };
      const decision = evaluateHttpRequest(p, ctx);
      if (decision.answer) return decision.answer.status;
      recordAnswer(ctx, decision, status, NOW + ms);
      return status;
    };
    late(0, 500);
    late(1, 500);
    late(20_000, 200);
    late(20_001, 200);
    assert.equal(late(20_002, 200), 200);
  });
});
