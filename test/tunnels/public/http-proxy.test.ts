import { HttpPolicy } from '../../../src/tunnels/public/http-policy.js';
import { PolicyGate } from '../../../src/tunnels/public/policy-gate.js';
import { NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { ConnectionSink } from '../../../src/tunnels/public/connections.js';
import { EdgeCertificates } from '../../../src/tunnels/public/edge-certificates.js';
import { HttpProxy, hostOf, requestHeaders } from '../../../src/tunnels/public/http-proxy.js';
import { ProxyOpener } from '../../../src/tunnels/public/opener.js';
import { EndpointPool } from '../../../src/tunnels/registry.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { makeTempDir, cleanupProcesses } from '../../helpers/server-process.js';

test('hostOf: lower-case, port and trailing dot removed, IPv6 brackets, bad values undefined', () => {
  assert.equal(hostOf('App.Burrow.Localhost:8081'), 'app.burrow.localhost');
  assert.equal(hostOf('app.burrow.localhost.'), 'app.burrow.localhost');
  assert.equal(hostOf('[::1]:80'), '::1');
  assert.equal(hostOf('127.0.0.1'), '127.0.0.1');
  assert.equal(hostOf(undefined), undefined);
  assert.equal(hostOf(''), undefined);
  assert.equal(hostOf('host:notaport'), undefined);
  assert.equal(hostOf('[::1'), undefined);
});

test('requestHeaders: hop-by-hop dropped, X-Forwarded-For appended, -Proto and -Host set by burrow', () => {
  const req = {
    rawHeaders: [
      'Host', 'a.example:8081',
      'Connection', 'keep-alive, X-Secret-Hop',
      'X-Secret-Hop', '1',
      'Keep-Alive', 'timeout=5',
      'X-Forwarded-For', '203.0.113.1',
      'X-Forwarded-Proto', 'https',
      'X-Forwarded-Host', 'spoofed',
      'Transfer-Encoding', 'chunked',
      'Accept', 'text/html',
    ],
    headers: { host: 'a.example:8081', connection: 'keep-alive, X-Secret-Hop' },
  } as unknown as http.IncomingMessage;
  const headers = requestHeaders(req, 'http', '::ffff:198.51.100.2', false);
  const pairs: [string, string][] = [];
  for (let i = 0; i < headers.length; i += 2) pairs.push([headers[i]!, headers[i + 1]!]);
  assert.deepEqual(pairs, [
    ['Host', 'a.example:8081'],
    ['Transfer-Encoding', 'chunked'],
    ['Accept', 'text/html'],
    ['X-Forwarded-For', '203.0.113.1, 198.51.100.2'],
    ['X-Forwarded-Proto', 'http'],
    ['X-Forwarded-Host', 'a.example:8081'],
  ]);
  // An upgrade keeps Connection / Upgrade: the agent's side must see them.
  const upgrade = requestHeaders(req, 'https', '198.51.100.2', true);
  assert.ok(upgrade.includes('Connection'));
  assert.equal(upgrade[upgrade.indexOf('X-Forwarded-Proto') + 1], 'https');
});

test('edge certificate coverage: the domain and one label below it', async () => {
  const ca = await loadOrCreateCa(makeTempDir('edge-ca-'));
  const leaf = await issueCertificate(ca, { dnsNames: ['burrow.localhost', '*.burrow.localhost'] });
  const certificates = new EdgeCertificates({ cert: leaf.certPem, key: leaf.keyPem, ca });
  assert.ok(certificates.covers('burrow.localhost'));
  assert.ok(certificates.covers('app.burrow.localhost'));
  assert.ok(!certificates.covers('a.b.burrow.localhost'));
  assert.ok(!certificates.covers('example.com'));
  assert.ok(await certificates.contextFor('a.b.burrow.localhost')); // issued on demand
  await cleanupProcesses();
});

describe404and502();

function describe404and502(): void {
  let proxy: HttpProxy;
  let port: number;
  const lines: Record<string, unknown>[] = [];
  before(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const sink = new ConnectionSink(logger, undefined);
    const pool = new EndpointPool('http://busy.example', 'ep_busy', false);
    // A tunnel whose agent is gone: nothing can take the request.
    pool.tunnels.push({ id: 'tn_1', sessionId: 'ts_gone', accountId: 'acct_1', proto: 'http', url: pool.url, labels: null, proxyProto: 0, policy: NO_POLICY });
    const route = (host: string) => (host === 'busy.example' ? pool : undefined);
    proxy = new HttpProxy({
      scheme: 'http',
      routes: { exact: route, wildcard: () => undefined, poolFor: route, urlOf: (host) => `http://${host}` },
      opener: new ProxyOpener({ connectionOf: () => undefined }),
      sink,
      gate: new PolicyGate('local', undefined),
      httpPolicy: new HttpPolicy('local', undefined),
    });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    port = (proxy.server.address() as net.AddressInfo).port;
  });
  after(() => proxy.server.close());

  const get = (host: string) =>
    new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: false }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
        })
        .on('error', reject);
    });

  test('an unknown host: 404 naming ERR_NGROK_3200', async () => {
    const answer = await get('Nobody.Example:1234');
    assert.equal(answer.status, 404);
    assert.equal(answer.body, 'The endpoint nobody.example is offline.\n\nERR_NGROK_3200\n');
    assert.equal(answer.headers['ngrok-error-code'], 'ERR_NGROK_3200');
  });

  test('an endpoint whose agents cannot take the request: 502; the connection is logged unrouted', async () => {
    const answer = await get('busy.example');
    assert.equal(answer.status, 502);
    assert.match(answer.body, /busy\.example/);
    for (let i = 0; i < 50 && !lines.some((line) => line.event === 'public_connection' && line.endpoint_id === 'ep_busy'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    // the connection's line (each request has its own http_request line too)
    const line = lines.find((entry) => entry.event === 'public_connection' && entry.endpoint_id === 'ep_busy');
    assert.equal(lines.find((entry) => entry.event === 'http_request' && entry.endpoint_id === 'ep_busy')?.status, 502);
    assert.equal(line?.verdict, 'unrouted');
    assert.equal(line?.requests, 1);
  });
}
