import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentRefusal } from '../../../src/domain/tunnels/agent-errors.js';
import { httpProgram, compileBindPolicy, evaluateConnection, NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';

const connection = (clientIp: string) => ({
  clientIp,
  clientPort: 40000,
  serverIp: '127.0.0.1',
  serverPort: 20001,
  region: 'local',
  startedAt: 0,
  now: 0,
  endpoint: { url: 'tcp://127.0.0.1:20001', host: '127.0.0.1', port: 20001, protocol: 'tcp' },
});

test('no policy allows everything without evaluating', () => {
  assert.equal(evaluateConnection(NO_POLICY, connection('1.2.3.4')).allowed, true);
});

test('IPRestriction runs first and closes with its own name', () => {
  const policy = compileBindPolicy('{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}', { allowCidrs: ['10.0.0.0/8'], denyCidrs: [] }, 25, 'tcp');
  const outside = evaluateConnection(policy, connection('192.0.2.1'));
  assert.deepEqual([outside.allowed, outside.closedBy, outside.verdicts.length], [false, 'ip_restriction', 1]);
  const inside = evaluateConnection(policy, connection('10.1.2.3'));
  assert.deepEqual([inside.allowed, inside.closedBy, inside.verdicts.length], [false, 'traffic_policy', 2]);
});

test('deny CIDRs of IPRestriction, IPv4-mapped clients included', () => {
  const policy = compileBindPolicy(undefined, { allowCidrs: [], denyCidrs: ['192.0.2.0/24'] }, 25, 'tcp');
  assert.equal(evaluateConnection(policy, connection('::ffff:192.0.2.9')).allowed, false);
  assert.equal(evaluateConnection(policy, connection('198.51.100.1')).allowed, true);
});

test('an invalid agent policy refuses the bind with the API code', () => {
  const refused = (document: string) => {
    try {
      compileBindPolicy(document, null, 25, 'tcp');
    } catch (error) {
      assert.ok(error instanceof AgentRefusal);
      return error.code;
    }
    assert.fail('expected a refusal');
  };
  assert.equal(refused('on_http_request: [{actions: [{type: deny}]}]'), 2230);
  assert.equal(refused('{"on_tcp_connect": [{"expressions": ["1 +"], "actions": [{"type": "deny"}]}]}'), 2200);
  assert.throws(() => compileBindPolicy(undefined, { allowCidrs: ['not-a-cidr'], denyCidrs: [] }, 25, 'tcp'), AgentRefusal);
});

test('an HTTP phase is refused on tcp and tls endpoints (2230), accepted on http and https ones', () => {
  const document = 'on_http_request: [{actions: [{type: deny}]}]\non_http_response: [{actions: [{type: log, config: {metadata: {a: b}}}]}]';
  for (const kind of ['tcp', 'tls'] as const) {
    assert.throws(() => compileBindPolicy(document, null, 25, kind), (error) => error instanceof AgentRefusal && error.code === 2230 && /on_http_request/.test(error.message));
  }
  for (const kind of ['http', 'https'] as const) {
    const compiled = compileBindPolicy(document, null, 25, kind);
    assert.equal(compiled.policy?.phases.on_http_request.length, 1);
    assert.equal(compiled.policy?.phases.on_http_response.length, 1);
    assert.equal(compiled.policy?.phases.on_tcp_connect.length, 0);
  }
});

test('an agent policy’s refusal speaks of an endpoint, a stored edge policy of a TLS edge', () => {
  const message = (document: string, subject?: 'edge' | 'endpoint') => {
    try {
      compileBindPolicy(document, null, 25, subject === 'edge' ? 'tls-edge' : 'tcp');
    } catch (error) {
      return (error as AgentRefusal).message;
    }
    assert.fail('expected a refusal');
  };
  const documents = [
    'on_http_request: [{actions: [{type: deny}]}]',
    'outbound: []\n',
    'on_tcp_connect: [{actions: [{type: rate-limit, config: {}}]}]',
    'on_tcp_connect: [{actions: [{type: block}]}]',
    'on_tcp_connect: [{expressions: ["req.url == \'/\'"], actions: [{type: deny}]}]',
    'on_tcp_connect: []\nphase2: []',
  ];
  for (const document of documents) {
    const forEndpoint = message(document);
    assert.match(forEndpoint, /a burrow endpoint/, document);
    assert.doesNotMatch(forEndpoint, /TLS edge/, document);
    assert.match(message(document, 'edge'), /a TLS edge/, document);
  }
  // The wording does not leak from one validation into the next.
  assert.match(message(documents[0]!, 'edge'), /a TLS edge/);
});

test('endpoint options become rules run before the policy; unservable values refuse the bind by name', () => {
  const opts = {
    BasicAuth: { credentials: [{ username: 'admin', cleartext_password: 's3cretpass' }] },
    RequestHeaders: { add: ['X-A:1'], remove: ['x-b'] },
    ResponseHeaders: { add: ['X-C: 2'] },
  };
  const compiled = compileBindPolicy('on_http_request: [{actions: [{type: deny}]}]', null, 25, 'http', opts);
  const program = httpProgram(compiled)!;
  assert.deepEqual(
    program.phases.on_http_request.map((rule) => `${rule.name}:${rule.actions.map((a) => a.type).join('+')}`),
    ['BasicAuth:basic-auth', 'RequestHeaders:remove-headers', 'RequestHeaders:add-headers', 'null:deny'],
  );
  assert.deepEqual(program.phases.on_http_response.map((rule) => rule.name), ['ResponseHeaders']);
  assert.equal(httpProgram(compiled), program, 'combined once per policy');
  assert.equal(httpProgram(compileBindPolicy(undefined, null, 25, 'http', {})), undefined);
  const refusal = (options: Record<string, unknown>) => {
    try {
      compileBindPolicy(undefined, null, 25, 'http', options);
    } catch (error) {
      assert.ok(error instanceof AgentRefusal);
      return `${error.code} ${error.message}`;
    }
    return 'accepted';
  };
  assert.match(refusal({ BasicAuth: { credentials: [{ username: 'a', hashed_password: 'AAAA' }] } }), /^301 .*BasicAuth.*hashed/s);
  assert.match(refusal({ BasicAuth: { credentials: [{ username: 'a', cleartext_password: 'short' }] } }), /^2204 /);
  assert.doesNotMatch(refusal({ BasicAuth: { credentials: [{ username: 'a', cleartext_password: 'short' }] } }), /short/);
  assert.match(refusal({ RequestHeaders: { add: ['X-A:${conn.client_ip}'] } }), /^301 .*RequestHeaders/s);
  assert.match(refusal({ RequestHeaders: { add: ['no-colon'] } }), /^301 /);
  assert.match(refusal({ ResponseHeaders: { remove: ['Content-Length'] } }), /^2204 /);
});

test('UserAgentFilter: allow wins, then deny; any other agent refused when an allow list is given', async () => {
  const { evaluateHttpRequest, RateBuckets } = await import('../../../src/domain/policy/index.js');
  const status = (filter: Record<string, unknown>, agent: string) => {
    const program = httpProgram(compileBindPolicy(undefined, null, 25, 'https', { UserAgentFilter: filter }))!;
    const decision = evaluateHttpRequest(program, {
      connection: { clientIp: '192.0.2.1', clientPort: 1, serverIp: '127.0.0.1', serverPort: 443, region: 'x', startedAt: 0, endpoint: {}, now: 0 },
      request: { method: 'GET', target: '/', version: '1.1', scheme: 'https', headers: ['Host', 'a', 'User-Agent', agent], receivedAt: 0 },
      buckets: new RateBuckets(),
    });
    return decision.answer?.status ?? 200;
  };
  assert.equal(status({ deny: ['(?i)bot'] }, 'GoodBot/1'), 403);
  assert.equal(status({ deny: ['(?i)bot'] }, 'curl/8'), 200);
  assert.equal(status({ allow: ['^curl/'], deny: ['.*'] }, 'curl/8'), 200);
  assert.equal(status({ allow: ['^curl/'] }, 'wget'), 403);
  assert.equal(status({ deny: ['a"b\\d'] }, 'a"b1'), 403);
  assert.throws(() => compileBindPolicy(undefined, null, 25, 'https', { UserAgentFilter: { deny: ['(?=x)'] } }), AgentRefusal);
});
