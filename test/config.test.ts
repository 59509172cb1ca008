import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, DEFAULT_DATABASE_URL, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('has safe defaults and is frozen', () => {
    const config = loadConfig({}, {});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.databaseUrl, DEFAULT_DATABASE_URL);
    assert.equal(config.publicUrl, undefined);
    assert.equal(config.trustProxy, false);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.maxPolicyRules, 25);
    assert.ok(Object.isFrozen(config));
  });

  it('reads every variable', () => {
    const config = loadConfig({}, {
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@db:5432/burrow',
      PUBLIC_URL: 'https://api.example.com/',
      TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
      LOG_LEVEL: 'warn',
      BOOTSTRAP_API_KEY: '2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ_abcdefghijklmnopqrstu',
      RATE_LIMIT_PER_MINUTE: '0',
    });
    assert.equal(config.port, 9000);
    assert.equal(config.publicUrl, 'https://api.example.com');
    assert.equal(config.trustProxy, '10.0.0.0/8,127.0.0.1');
    assert.equal(config.rateLimitPerMinute, 0);
    assert.equal(config.bootstrapApiKey, '2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ_abcdefghijklmnopqrstu');
  });

  it('lets a command-line override win over its variable, checked the same way, without touching the environment', () => {
    const env = { DATABASE_URL: 'sqlite:./a.db', PORT: '9000' };
    const config = loadConfig({ databaseUrl: 'sqlite:./b.db' }, env);
    assert.equal(config.databaseUrl, 'sqlite:./b.db');
    assert.equal(config.port, 9000);
    assert.equal(env.DATABASE_URL, 'sqlite:./a.db');
    assert.equal(loadConfig({ databaseUrl: undefined }, env).databaseUrl, 'sqlite:./a.db');
    assert.throws(() => loadConfig({ databaseUrl: 'mysql://x' }, env), (error: unknown) => error instanceof ConfigError && error.message.includes('DATABASE_URL'));
  });

  it('takes any BOOTSTRAP_API_KEY of the well-formed shape, a KSUID or not', () => {
    for (const key of ['a'.repeat(27) + '_' + 'b'.repeat(21), 'z'.repeat(27) + '_' + 'Z'.repeat(20), '0'.repeat(27) + '_' + '9'.repeat(22)]) {
      assert.equal(loadConfig({}, { BOOTSTRAP_API_KEY: key }).bootstrapApiKey, key);
    }
  });

  it('reads REQUIRE_RESERVED_NAMES as a flag, off by default, and refuses anything else by name', () => {
    assert.equal(loadConfig({}, {}).tunnels.requireReservedNames, false);
    for (const on of ['true', '1']) assert.equal(loadConfig({}, { REQUIRE_RESERVED_NAMES: on }).tunnels.requireReservedNames, true);
    for (const off of ['false', '0', '']) assert.equal(loadConfig({}, { REQUIRE_RESERVED_NAMES: off }).tunnels.requireReservedNames, false);
    assert.throws(() => loadConfig({}, { REQUIRE_RESERVED_NAMES: 'yes' }), (error: unknown) => error instanceof ConfigError && /REQUIRE_RESERVED_NAMES must be true or false/.test(error.message));
  });

  it('reads EDGE_TLS_CERTS_DIR as a path, absent when unset or empty', () => {
    assert.equal(loadConfig({}, {}).tunnels.edgeTlsCertsDir, undefined);
    assert.equal(loadConfig({}, { EDGE_TLS_CERTS_DIR: '' }).tunnels.edgeTlsCertsDir, undefined);
    assert.equal(loadConfig({}, { EDGE_TLS_CERTS_DIR: '/etc/burrow/certs' }).tunnels.edgeTlsCertsDir, '/etc/burrow/certs');
  });

  it('reads CLUSTER_SECRET, CLUSTER_ADDR and PROXY_PROTOCOL_FROM, all off by default, never echoing the secret', () => {
    assert.deepEqual(loadConfig({}, {}).tunnels.cluster, { secret: undefined, addr: undefined, proxyProtocolFrom: [], routeWaitWindowMs: 15_000 });
    const secret = 'ab'.repeat(32);
    const cluster = loadConfig({}, { CLUSTER_SECRET: secret, CLUSTER_ADDR: '10.0.0.5:7443', PROXY_PROTOCOL_FROM: '10.0.0.0/8, ::1' }).tunnels.cluster;
    assert.deepEqual(cluster.secret, Buffer.from(secret, 'hex'));
    assert.equal(cluster.addr, '10.0.0.5:7443');
    assert.deepEqual(cluster.proxyProtocolFrom, ['10.0.0.0/8', '::1']);
    for (const addr of ['node-1.internal:7443', '[fd00::1]:7443']) assert.equal(loadConfig({}, { CLUSTER_ADDR: addr }).tunnels.cluster.addr, addr);
    const wrong = 'cd'.repeat(31);
    assert.throws(() => loadConfig({}, { CLUSTER_SECRET: wrong }), (error: unknown) => error instanceof ConfigError && /CLUSTER_SECRET must be 64 hex digits/.test(error.message) && !error.message.includes(wrong));
  });

  it('reads ROUTE_WAIT_WINDOW_MS, 15 s by default, from 0 to 10 minutes', () => {
    assert.equal(loadConfig({}, { ROUTE_WAIT_WINDOW_MS: '2000' }).tunnels.cluster.routeWaitWindowMs, 2000);
    assert.equal(loadConfig({}, { ROUTE_WAIT_WINDOW_MS: '0' }).tunnels.cluster.routeWaitWindowMs, 0);
    assert.equal(loadConfig({}, { ROUTE_WAIT_WINDOW_MS: '600000' }).tunnels.cluster.routeWaitWindowMs, 600_000);
  });

  it('takes 0 as "no limit" for both session limits', () => {
    const { tunnels } = loadConfig({}, { MAX_SESSIONS_PER_ACCOUNT: '0', MAX_ENDPOINTS_PER_SESSION: '0' });
    assert.equal(tunnels.maxSessionsPerAccount, 0);
    assert.equal(tunnels.maxEndpointsPerSession, 0);
  });

  it('ends each message with one full stop', () => {
    for (const env of [{ EDGE_DOMAIN: 'a..b' }, { EDGE_PUBLIC_HOST: '::1' }, { AGENT_HOSTNAME: 'a..b' }]) {
      assert.throws(
        () => loadConfig({}, env),
        (error: unknown) => error instanceof ConfigError && /[^.]\.$/.test(error.message),
      );
    }
    assert.equal(loadConfig({}, { AGENT_HOSTNAME: 'Agent-1.Example.com' }).tunnels.agentHostname, 'agent-1.example.com');
    assert.equal(loadConfig({}, { AGENT_HOSTNAME: '::1' }).tunnels.agentHostname, '::1');
  });

  it('lists the edge listeners asked for while AGENT_PORT=0 turns the data plane off (serve warns of them)', () => {
    const off = (extra: Record<string, string>) => loadConfig({}, { AGENT_PORT: '0', ...extra }).tunnels.ignoredWithoutDataPlane;
    assert.deepEqual(off({ EDGE_HTTP_PORT: '8081', EDGE_TLS_PORT: '0', EDGE_TCP_PORTS: '20000-20010' }), ['EDGE_HTTP_PORT', 'EDGE_TCP_PORTS']);
    assert.deepEqual(off({ EDGE_HTTP_PORT: '0', EDGE_TLS_PORT: '0', EDGE_TCP_PORTS: '' }), [], 'the README\'s API-only setting');
    assert.deepEqual(off({}), [], 'defaults are not asked for');
    assert.deepEqual(loadConfig({}, { EDGE_HTTP_PORT: '8081' }).tunnels.ignoredWithoutDataPlane, [], 'with the data plane on, nothing is ignored');
  });

  it('serves the console unless CONSOLE=off; CONSOLE_IDLE_MINUTES sets its idle expiry; INSPECTION_KEEP', () => {
    assert.deepEqual(loadConfig({}, {}).console, { enabled: true, idleTimeoutMs: 30 * 60_000, inspectionKeep: 1000 });
    assert.deepEqual(loadConfig({}, { CONSOLE: 'OFF', CONSOLE_IDLE_MINUTES: '5', INSPECTION_KEEP: '50' }).console, { enabled: false, idleTimeoutMs: 5 * 60_000, inspectionKeep: 50 });
    assert.throws(() => loadConfig({}, { INSPECTION_KEEP: '0' }), /INSPECTION_KEEP/);
    assert.throws(() => loadConfig({}, { CONSOLE: 'no' }), /CONSOLE must be on or off/);
    assert.throws(() => loadConfig({}, { CONSOLE_IDLE_MINUTES: '0' }), /CONSOLE_IDLE_MINUTES/);
  });

  it('refuses a headers timeout longer than the request timeout, naming both', () => {
    assert.throws(() => loadConfig({}, { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }), /HEADERS_TIMEOUT_MS.*REQUEST_TIMEOUT_MS/);
    assert.equal(loadConfig({}, { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '0' }).headersTimeoutMs, 20000);
  });

  for (const [name, value] of [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'postgres://u@db/burrow?schema=bad-name;drop'],
    ['DATABASE_URL', 'postgres://u@db/burrow?schema=Upper'],
    ['PUBLIC_URL', 'not a url'],
    ['PUBLIC_URL', 'ftp://x.example.com'],
    ['PUBLIC_URL', 'https://x.example.com/?q=1'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', '300.1.1.1'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.0/8,::1/129'],
    ['TRUST_PROXY', '10.0.0.0/08'],
    ['TRUST_PROXY', '2'],
    ['TRUST_PROXY', '10.0.0.1,'],
    ['LOG_LEVEL', 'loud'],
    ['BOOTSTRAP_API_KEY', 'short'],
    ['RATE_LIMIT_PER_MINUTE', 'lots'],
    ['MAX_POLICY_RULES', '0'],
    ['AGENT_HOSTNAME', 'a..b'],
    ['AGENT_HOSTNAME', '-agent.example.com'],
    ['AGENT_HOSTNAME', `${'a'.repeat(64)}.example.com`],
    ['EDGE_DOMAIN', 'a..b'],
    ['CLUSTER_SECRET', 'z'.repeat(64)],
    ['CLUSTER_SECRET', 'ab'.repeat(33)],
    ['CLUSTER_ADDR', '10.0.0.5'],
    ['CLUSTER_ADDR', '10.0.0.5:0'],
    ['CLUSTER_ADDR', '10.0.0.5:70000'],
    ['CLUSTER_ADDR', 'fd00::1:7443'],
    ['CLUSTER_ADDR', 'bad host:7443'],
    ['PROXY_PROTOCOL_FROM', '10.0.0.0/33'],
    ['PROXY_PROTOCOL_FROM', 'haproxy'],
    ['ROUTE_WAIT_WINDOW_MS', '600001'],
    ['ROUTE_WAIT_WINDOW_MS', '-1'],
    ['ROUTE_WAIT_WINDOW_MS', '2s'],
  ]) {
    it(`rejects ${name}=${JSON.stringify(value)} with a message naming ${name}`, () => {
      assert.throws(
        () => loadConfig({}, { [name!]: value }),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name!),
      );
    });
  }
});
