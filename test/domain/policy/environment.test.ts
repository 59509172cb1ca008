// @test-pass sqlite
// The on_tcp_connect CEL environment: it type-checks expressions and can also evaluate them,
// including the inCidrRange/inCidrRanges functions.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { tcpConnectEnvironment } from '../../../src/domain/policy/index.js';

const conn = (client_ip: string) => ({
  conn: {
    client_ip,
    client_port: 51234n,
    server_ip: '198.51.100.1',
    server_port: 443n,
    server_region: 'eu',
    ts: { start: new Date('2026-01-02T03:04:05Z') },
    geo: { city: 'Berlin', country: 'Germany', country_code: 'DE', latitude: '52.5', longitude: '13.4', radius: '10', subdivision: 'BE' },
  },
});

describe('tcpConnectEnvironment: evaluation', () => {
  const env = tcpConnectEnvironment();

  test('is built once and reused', () => assert.equal(tcpConnectEnvironment(), env));

  const cases: Array<[string, string, boolean]> = [
    ["inCidrRange(conn.client_ip, '10.0.0.0/8')", '10.20.30.40', true],
    ["inCidrRange(conn.client_ip, '10.0.0.0/8')", '11.20.30.40', false],
    ["inCidrRange(conn.client_ip, '2001:db8::/32')", '2001:db8::7', true],
    ["inCidrRange(conn.client_ip, '2001:db8::/32')", '2001:db9::7', false],
    ["inCidrRange(conn.client_ip, 'garbage')", '10.20.30.40', false],
    ["inCidrRange(conn.client_ip, '10.0.0.0/8')", 'garbage', false],
    ["inCidrRanges(conn.client_ip, ['192.168.0.0/16', '10.0.0.0/8'])", '10.20.30.40', true],
    ["inCidrRanges(conn.client_ip, ['192.168.0.0/16', '2001:db8::/32'])", '10.20.30.40', false],
    ["inCidrRanges(conn.client_ip, ['bad', '2001:db8::/32'])", '2001:db8::1', true],
    ["inCidrRanges(conn.client_ip, [])", '10.20.30.40', false],
    ["!inCidrRange(conn.client_ip, '10.0.0.0/8') && conn.geo.country_code == 'DE'", '8.8.8.8', true],
  ];
  for (const [expression, ip, expected] of cases) {
    test(`${expression} with ${ip} → ${expected}`, () => {
      assert.equal(env.evaluate(expression, conn(ip)), expected);
    });
  }

  test('typed fields evaluate with their CEL types', () => {
    assert.equal(env.evaluate('conn.client_port > 1024 && conn.server_port == 443', conn('1.1.1.1')), true);
    assert.equal(env.evaluate("conn.ts.start < timestamp('2027-01-01T00:00:00Z')", conn('1.1.1.1')), true);
    assert.equal(env.evaluate("conn.geo.country_code in ['DE', 'FR']", conn('1.1.1.1')), true);
  });
});

describe('tcpConnectEnvironment: checking', () => {
  const env = tcpConnectEnvironment();
  const types: Array<[string, string]> = [
    ['conn.geo.country_code', 'string'],
    ['conn.client_port', 'int'],
    ['endpoint.port', 'int'],
    ['time.now', 'string'],
    ["inCidrRange('1.2.3.4', '1.2.3.0/24')", 'bool'],
    ["inCidrRanges('1.2.3.4', ['1.2.3.0/24'])", 'bool'],
    ["actions.ngrok.log.metadata['x']", 'dyn'],
  ];
  for (const [expression, type] of types) {
    test(`${expression} has type ${type}`, () => {
      const result = env.check(expression);
      assert.equal(result.valid, true, result.error?.message);
      assert.equal(result.type, type);
    });
  }
  for (const expression of ['req.url', "getReqHeader('x')", "inCidrRange('1.2.3.4')", "inCidrRanges('1.2.3.4', '1.2.3.0/24')", 'conn.nope']) {
    test(`${expression} does not check`, () => assert.equal(env.check(expression).valid, false));
  }
});
