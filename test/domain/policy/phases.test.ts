// @test-pass sqlite
// HTTP-POLICY.md §1: which phases each endpoint kind holds, and each phase's own variables and actions.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, validatePolicy, type EndpointKind } from '../../../src/domain/policy/index.js';

function outcome(document: string, endpoint: EndpointKind, maxRules?: number): { code: string; message: string } | 'ok' {
  const result = validatePolicy(document, { endpoint, subject: endpoint === 'tls-edge' ? 'edge' : 'endpoint', ...(maxRules === undefined ? {} : { maxRules }) });
  return result.ok ? 'ok' : result.error;
}

function code(document: string, endpoint: EndpointKind): string {
  const result = outcome(document, endpoint);
  return result === 'ok' ? 'ok' : result.code;
}

const REQUEST = 'on_http_request:\n  - actions: [{type: deny}]\n';
const RESPONSE = 'on_http_response:\n  - actions: [{type: log, config: {metadata: {a: b}}}]\n';

describe('phases by endpoint kind', () => {
  for (const kind of ['tcp', 'tls', 'tls-edge'] as const) {
    test(`${kind}: an HTTP phase is ERR_NGROK_2230, naming the phase`, () => {
      for (const document of [REQUEST, RESPONSE, 'outbound: []\n', 'on_tcp_connect: []\non_http_request: []\n']) {
        const result = outcome(document, kind);
        assert.notEqual(result, 'ok', document);
        if (result === 'ok') return;
        assert.equal(result.code, 'ERR_NGROK_2230', document);
        assert.match(result.message, /on_http_request|on_http_response|outbound/);
        assert.match(result.message, /has only the on_tcp_connect phase/);
      }
      assert.equal(code('inbound: [{actions: [{type: deny}]}]\n', kind), 'ok');
    });
  }

  for (const kind of ['http', 'https'] as const) {
    test(`${kind}: all three phases, and the legacy names of the HTTP ones`, () => {
      const all = `on_tcp_connect:\n  - actions: [{type: deny}]\n${REQUEST}${RESPONSE}`;
      assert.equal(code(all, kind), 'ok');
      const compiled = compilePolicy(all, { endpoint: kind, subject: 'endpoint' });
      assert.ok(compiled.ok);
      assert.deepEqual(
        [compiled.program.phases.on_tcp_connect.length, compiled.program.phases.on_http_request.length, compiled.program.phases.on_http_response.length],
        [1, 1, 1],
      );
      assert.equal(compiled.program.rules, compiled.program.phases.on_tcp_connect);
      const legacy = validatePolicy('inbound: [{actions: [{type: deny}]}]\noutbound: []\n', { endpoint: kind });
      assert.ok(legacy.ok);
      assert.equal(legacy.policy.phases.on_http_request.length, 1);
      assert.equal(legacy.policy.phases.on_tcp_connect.length, 0);
      const both = outcome('inbound: []\non_http_request: []\n', kind);
      assert.ok(both !== 'ok' && both.code === 'ERR_NGROK_2236' && /inbound and on_http_request/.test(both.message));
    });
  }

  test('an unknown top-level key lists the phases of the kind', () => {
    const result = outcome('on_http_requests: []\n', 'http');
    assert.ok(result !== 'ok' && result.code === 'ERR_NGROK_2236');
    assert.match(result.message, /on_tcp_connect, on_http_request and on_http_response/);
  });

  test('rules are counted per phase (2264 names the phase)', () => {
    const rules = (n: number) => '  - actions: [{type: deny}]\n'.repeat(n);
    assert.equal(outcome(`on_tcp_connect:\n${rules(2)}on_http_request:\n${rules(2)}`, 'http', 2), 'ok');
    const over = outcome(`on_tcp_connect:\n${rules(2)}on_http_request:\n${rules(3)}`, 'http', 2);
    assert.ok(over !== 'ok' && over.code === 'ERR_NGROK_2264' && /on_http_request phase has 3 rules/.test(over.message));
  });
});

describe('each phase has its own variables', () => {
  const cases: Array<[string, string, string, string]> = [
    // [phase, expression, endpoint kind, expected]
    ['on_http_request', "req.url.path.startsWith('/api')", 'http', 'ok'],
    ['on_http_request', "req.method == 'GET' && 'x' in req.headers", 'http', 'ok'],
    ['on_http_request', "vars.stage == 'beta'", 'http', 'ok'],
    ['on_http_request', 'res.status_code == 200', 'http', 'ERR_NGROK_2200'],
    ['on_http_response', 'res.status_code >= 500 && req.method == "POST"', 'https', 'ok'],
    ['on_tcp_connect', "req.method == 'GET'", 'http', 'ERR_NGROK_2200'],
    ['on_tcp_connect', "conn.client_ip == '1.2.3.4'", 'http', 'ok'],
  ];
  for (const [phase, expression, kind, expected] of cases) {
    test(`${phase} on ${kind}: ${expression} → ${expected}`, () => {
      const document = JSON.stringify({ [phase]: [{ expressions: [expression], actions: [{ type: 'log', config: { metadata: { a: 'b' } } }] }] });
      const result = outcome(document, kind as EndpointKind);
      assert.equal(result === 'ok' ? 'ok' : result.code, expected, result === 'ok' ? '' : result.message);
      if (result !== 'ok') assert.match(result.message, new RegExp(`in the ${phase} phase`));
    });
  }

  test('the same text compiles against each phase’s own environment', () => {
    const document = 'on_http_request:\n  - expressions: ["endpoint.port == 80"]\n    actions: [{type: deny}]\non_tcp_connect:\n  - expressions: ["endpoint.port == 80"]\n    actions: [{type: deny}]\n';
    const compiled = compilePolicy(document, { endpoint: 'http' });
    assert.ok(compiled.ok);
    assert.notEqual(compiled.program.phases.on_http_request[0]!.expressions[0]!.run, compiled.program.phases.on_tcp_connect[0]!.expressions[0]!.run);
  });
});

describe('each phase serves its own actions', () => {
  test('an action of another phase is 2202, naming the phase and what it serves', () => {
    const result = outcome('on_http_response:\n  - actions: [{type: deny}]\n', 'http');
    assert.ok(result !== 'ok' && result.code === 'ERR_NGROK_2202');
    assert.match(result.message, /"deny" is not allowed in the on_http_response phase/);
  });

  test('an action burrow serves nowhere is refused by name (2202)', () => {
    for (const type of ['forward-internal', 'http-request', 'owasp-crs-request', 'saml']) {
      const result = outcome(`on_http_request:\n  - actions: [{type: ${type}}]\n`, 'http');
      assert.ok(result !== 'ok' && result.code === 'ERR_NGROK_2202', type);
      assert.match(result.message, new RegExp(`"${type}" is not allowed in the on_http_request phase .*does not serve it in any phase`));
    }
  });
});
