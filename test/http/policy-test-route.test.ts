import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';
import { TRIAL_HTTP_POLICY } from '../helpers/policy.js';

// POST /traffic_policy/test (HTTP-POLICY.md §6 over the API; DECISIONS "The policy test over the API").
const TCP_POLICY = `on_tcp_connect:
  - name: office
    actions:
      - type: restrict-ips
        config: {allow: ["203.0.113.0/24"]}
`;

interface Result {
  allowed: boolean;
  connection: Record<string, unknown>;
  on_tcp_connect: { rules: { rule: number; name: string | null; matched: boolean; actions: { type: string }[] }[]; closed_by: { rule: number; type: string } | null };
  on_http_request: { actions: { rule: number; type: string }[]; logs: unknown[]; answered: number | null } | null;
  on_http_response: { actions: { rule: number; type: string }[] } | null;
  forwarded: { method: string; path: string; headers: Record<string, string[]> } | null;
  answer: { status: number; headers: Record<string, string[]>; body: string | null } | null;
  report: string[];
}

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

const test = (body: unknown, key?: string) => t.call({ method: 'POST', url: '/traffic_policy/test', body, ...(key ? { key } : {}) });

describe('POST /traffic_policy/test', () => {
  it('runs a request and the agent’s answer through the HTTP phases: the request as the agent gets it, the answer the client gets', async () => {
    const response = await test({
      policy: TRIAL_HTTP_POLICY,
      connection: { client_ip: '198.51.100.9' },
      request: { method: 'GET', path: '/v1/items?q=1', headers: { Accept: ['text/html'] }, endpoint_url: 'http://app.example.com:8080' },
      response: { status: 200, headers: { Server: ['nginx'], 'Content-Type': ['text/html'] } },
    });
    assert.equal(response.statusCode, 200, response.body);
    const result = json<Result>(response);
    assert.equal(result.allowed, true);
    assert.equal(result.connection.client_ip, '198.51.100.9');
    assert.equal(result.connection.endpoint_host, 'app.example.com');
    assert.equal(result.connection.server_port, 8080);
    assert.deepEqual(result.on_http_request?.actions, [
      { rule: 3, type: 'add-headers' },
      { rule: 3, type: 'url-rewrite' },
      { rule: 3, type: 'log' },
    ]);
    // Actions see the request as earlier actions left it.
    assert.deepEqual(result.on_http_request?.logs, [{ path: '/v2/items' }]);
    assert.deepEqual(result.forwarded, {
      method: 'GET',
      path: '/v2/items?q=1',
      headers: { host: ['app.example.com:8080'], accept: ['text/html'], 'x-client': ['198.51.100.9'], 'x-q': ['1'] },
    });
    assert.equal(result.answer?.status, 200);
    assert.deepEqual(result.answer?.headers, { 'content-type': ['text/html'], 'x-status': ['200'] });
    assert.deepEqual(result.on_http_response?.actions.map((a) => a.type), ['remove-headers', 'add-headers']);
    // The same lines `burrow policy test` prints.
    assert.ok(result.report.includes('  Rule 2 ("private"): not matched'), result.report.join('\n'));
    assert.ok(result.report.includes('Verdict: reaches the agent'));
  });

  it('an answer the policy makes: nothing to the agent, its status and body, later rules not evaluated', async () => {
    const result = json<Result>(await test({ policy: TRIAL_HTTP_POLICY, request: { path: '/private/x' } }));
    assert.equal(result.allowed, false);
    assert.equal(result.forwarded, null);
    assert.equal(result.on_http_request?.answered, 403);
    assert.equal(result.answer?.status, 403);
    assert.match(result.answer?.body ?? '', /^403 Forbidden/);
    assert.deepEqual(result.answer?.headers['x-status'], ['403']);
    assert.ok(result.report.some((line) => /Rule 3 \("tag"\): not evaluated/.test(line)));
  });

  it('a login action: the trial carries no session, so the answer is the 302 to /ngrok/login, and the secret is nowhere', async () => {
    const policy = `on_http_request:
  - actions:
      - type: openid-connect
        config: {issuer_url: "https://accounts.google.com", client_id: app-id, client_secret: very-secret-value}
  - actions:
      - type: add-headers
        config: {headers: {x-user: "\${actions.ngrok.oidc.identity.email}"}}
`;
    const response = await test({ policy, request: { path: '/reports?year=2024' } });
    assert.equal(response.statusCode, 200, response.body);
    assert.ok(!response.body.includes('very-secret-value'));
    const result = json<Result>(response);
    assert.equal(result.allowed, false);
    assert.equal(result.forwarded, null);
    assert.equal(result.on_http_request?.answered, 302);
    const location = new URL(result.answer!.headers.location![0]!, 'https://app.example.com');
    assert.equal(location.pathname, '/ngrok/login');
    assert.equal(location.searchParams.get('redirect_path'), '/reports?year=2024');
    assert.ok(result.report.some((line) => /action 1 openid-connect: answered 302 \(no login session here: .*https:\/\/accounts\.google\.com/.test(line)), result.report.join('\n'));
    assert.ok(result.report.some((line) => /Rule 2: not evaluated/.test(line)), result.report.join('\n'));
  });

  it('a login action without its client secret is refused like any bad policy, naming the field', async () => {
    const policy = 'on_http_request:\n  - actions:\n      - type: oauth\n        config: {provider: github, client_id: x}\n';
    const response = await test({ policy, request: {} });
    assert.equal(response.statusCode, 400, response.body);
    assert.match(response.body, /client_secret/);
  });

  it('without a request: the connection phase of a TLS edge’s module; the client defaults to the caller', async () => {
    const closed = json<Result>(await test({ policy: TCP_POLICY }));
    assert.equal(closed.allowed, false);
    assert.equal(closed.connection.client_ip, '127.0.0.1');
    assert.deepEqual(closed.on_tcp_connect.closed_by, { rule: 1, name: 'office', action: 1, type: 'restrict-ips' });
    assert.deepEqual(closed.on_tcp_connect.rules[0]?.actions, [{ type: 'restrict-ips', action: 'deny', matched_cidr: '', enforced: true }]);
    assert.equal(closed.on_http_request, null);
    assert.equal(closed.answer, null);
    const allowed = json<Result>(await test({ policy: TCP_POLICY, connection: { client_ip: '203.0.113.7', time: '2024-05-01T12:00:00Z', endpoint_host: 'db.example.com' } }));
    assert.equal(allowed.allowed, true);
    assert.equal(allowed.connection.time, '2024-05-01T12:00:00Z');
    assert.match(allowed.report[0]!, /connection from 203\.0\.113\.7:50000 to db\.example\.com:443 at 2024-05-01T12:00:00\.000Z/);
    assert.equal(allowed.report.at(-1), 'Verdict: allowed');
  });

  it('an invalid policy is answered as the module PUT answers it, naming the field', async () => {
    const body = expectError(await test({ policy: 'on_tcp_connect:\n  - actions:\n      - type: no-such-action\n' }), 400, 'ERR_NGROK_2201');
    assert.equal((body.details as Record<string, string>).param, 'policy');
    // An HTTP phase is refused for a TLS edge's module (no request), accepted for an endpoint's.
    expectError(await test({ policy: TRIAL_HTTP_POLICY }), 400, 'ERR_NGROK_2230');
  });

  it('refuses each bad field by name (215), and unknown fields (214)', async () => {
    const cases: [unknown, string][] = [
      [{ policy: TCP_POLICY, connection: { client_ip: 'nope' } }, 'connection.client_ip'],
      [{ policy: TCP_POLICY, connection: { time: 'yesterday' } }, 'connection.time'],
      [{ policy: TRIAL_HTTP_POLICY, request: { method: 'GE T' } }, 'request.method'],
      [{ policy: TRIAL_HTTP_POLICY, request: { path: 'x' } }, 'request.path'],
      [{ policy: TRIAL_HTTP_POLICY, request: { endpoint_url: 'ftp://x' } }, 'request.endpoint_url'],
      [{ policy: TRIAL_HTTP_POLICY, request: { endpoint_url: 'https://x/path' } }, 'request.endpoint_url'],
      [{ policy: TRIAL_HTTP_POLICY, request: { headers: { 'bad name': ['x'] } } }, 'request.headers'],
      [{ policy: TRIAL_HTTP_POLICY, request: { headers: { x: ['a\r\nb'] } } }, 'request.headers'],
      [{ policy: TRIAL_HTTP_POLICY, request: {}, response: { status: 99 } }, 'response.status'],
      [{ policy: TCP_POLICY, connection: { client_port: 0 } }, 'connection.client_port'],
      [{ policy: TCP_POLICY, connection: { server_port: -1 } }, 'connection.server_port'],
    ];
    for (const [body, param] of cases) {
      const error = expectError(await test(body), 400, 'ERR_NGROK_215');
      assert.equal((error.details as Record<string, string>).param, param, JSON.stringify(body));
    }
    expectError(await test({ policy: TCP_POLICY, extra: 1 }), 400, 'ERR_NGROK_214');
    expectError(await test({ policy: TRIAL_HTTP_POLICY, request: {}, response: { status: 700 } }), 400, 'ERR_NGROK_215');
    expectError(await test({}), 400, 'ERR_NGROK_215');
  });

  it('an answer without a request: the request’s defaults (GET /), as an http/https endpoint’s policy', async () => {
    const result = json<Result>(await test({ policy: TRIAL_HTTP_POLICY, response: { status: 204 } }));
    assert.equal(result.forwarded?.method, 'GET');
    assert.equal(result.forwarded?.path, '/');
    assert.equal(result.answer?.status, 204);
  });

  it('needs an API key like every route, and any principal may try (nothing is read or written)', async () => {
    expectError(await t.call({ method: 'POST', url: '/traffic_policy/test', body: { policy: TCP_POLICY }, key: null }), 401, 'ERR_NGROK_200');
    const other = await t.newCaller({ newAccount: true });
    assert.equal((await test({ policy: TCP_POLICY }, other.key)).statusCode, 200);
  });
});
