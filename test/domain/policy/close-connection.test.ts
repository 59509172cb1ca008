// @test-pass sqlite
// close-connection in on_tcp_connect (HTTP-POLICY.md §2): validated as deny is, closes as deny does.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, evaluate, validatePolicy, type PolicyConnection } from '../../../src/domain/policy/index.js';

const CONNECTION: PolicyConnection = {
  clientIp: '203.0.113.7',
  clientPort: 80,
  serverIp: '10.0.0.1',
  serverPort: 443,
  region: 'eu',
  startedAt: 0,
  endpoint: { host: 'app.example.com', port: 443, protocol: 'tls' },
  now: 0,
};

describe('close-connection', () => {
  test('takes no config; an action after it is unreachable; not an HTTP-phase action here', () => {
    assert.ok(validatePolicy('on_tcp_connect:\n  - actions: [{type: close-connection}]\n').ok);
    assert.ok(validatePolicy('on_tcp_connect:\n  - actions: [{type: close-connection, config: {}}]\n').ok);
    for (const [document, code, words] of [
      ['on_tcp_connect:\n  - actions: [{type: close-connection, config: {status_code: 403}}]\n', 'ERR_NGROK_2203', /close-connection takes no config/],
      ['on_tcp_connect:\n  - actions: [{type: close-connection}, {type: log, config: {metadata: {a: 1}}}]\n', 'ERR_NGROK_2207', /action 1 \(close-connection\)/],
    ] as const) {
      const result = validatePolicy(document);
      assert.ok(!result.ok);
      assert.equal(result.error.code, code);
      assert.match(result.error.message, words);
    }
    const http = validatePolicy('on_http_request:\n  - actions: [{type: close-connection}]\n', { endpoint: 'https', subject: 'endpoint' });
    assert.ok(!http.ok);
    assert.equal(http.error.code, 'ERR_NGROK_2202');
  });

  test('closes the connection when its rule matches, and says which action did', () => {
    const compiled = compilePolicy('on_tcp_connect:\n  - name: low ports\n    expressions: ["conn.client_port < 1024"]\n    actions: [{type: close-connection}]\n');
    assert.ok(compiled.ok);
    const closed = evaluate(compiled.program, CONNECTION);
    assert.equal(closed.allowed, false);
    assert.deepEqual(closed.closedBy, { rule: 1, name: 'low ports', action: 1, type: 'close-connection' });
    assert.equal(evaluate(compiled.program, { ...CONNECTION, clientPort: 50000 }).allowed, true);
  });
});
