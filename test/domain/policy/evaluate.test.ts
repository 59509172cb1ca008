// @test-pass sqlite
// Table-driven evaluation cases (TUNNELS.md §5): every action, every variable, the functions,
// rule order, run-time errors and the phases. Each case is one policy and one connection.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, evaluate, validatePolicy } from '../../../src/domain/policy/index.js';
import type { ActionOutcome, PolicyConnection, Verdict } from '../../../src/domain/policy/index.js';

interface Rule {
  name?: string;
  expressions?: string[];
  actions: Array<{ type: string; config?: unknown }>;
}

interface Case {
  name: string;
  /** Rules of on_tcp_connect, or a whole document. */
  policy: Rule[] | string;
  conn?: Partial<PolicyConnection>;
  allowed: boolean;
  closedBy?: { rule: number; action: number; type: 'deny' | 'restrict-ips' };
  /** `matched` of every rule evaluated, in order. */
  matched?: boolean[];
  /** What the actions of every evaluated rule did (exactly). */
  actions?: ActionOutcome[][];
  /** Run-time errors expected, in order (none when absent). */
  errors?: RegExp[];
}

const START = Date.UTC(2024, 0, 2, 3, 4, 5);
const NOW = START + 1500;

const CONN: PolicyConnection = {
  clientIp: '203.0.113.7',
  clientPort: 51000,
  serverIp: '192.0.2.10',
  serverPort: 443,
  region: 'eu',
  startedAt: START,
  endpoint: { url: 'tls://app.example.com:443', addr: 'app.example.com:443', host: 'app.example.com', id: 'edghts_123', protocol: 'tls', port: 443 },
  now: NOW,
};

const deny = { type: 'deny' };
const log = (metadata: unknown) => ({ type: 'log', config: { metadata } });
const restrict = (config: { allow?: string[]; deny?: string[]; enforce?: boolean }) => ({ type: 'restrict-ips', config });
/** A rule that denies when `expression` is true: how most variable cases read a value. */
const denyIf = (expression: string): Rule[] => [{ expressions: [expression], actions: [deny] }];
const closedFirst = { rule: 1, action: 1, type: 'deny' } as const;
const ipsAllow = (matched_cidr: string, enforced = true): ActionOutcome => ({ type: 'restrict-ips', action: 'allow', matched_cidr, enforced });
const ipsDeny = (matched_cidr: string, enforced = true, error?: string): ActionOutcome =>
  error === undefined ? { type: 'restrict-ips', action: 'deny', matched_cidr, enforced } : { type: 'restrict-ips', action: 'deny', matched_cidr, enforced, error };

function document(policy: Rule[] | string): string {
  return typeof policy === 'string' ? policy : JSON.stringify({ on_tcp_connect: policy });
}

function run(policy: Rule[] | string, conn?: Partial<PolicyConnection>): Verdict {
  const compiled = compilePolicy(document(policy));
  assert.ok(compiled.ok, compiled.ok ? '' : `${compiled.error.code}: ${compiled.error.message}`);
  return evaluate(compiled.program, { ...CONN, ...conn });
}

const cases: Case[] = [
  // ── deny, rule order, stop after deny ──
  { name: 'deny without expressions closes', policy: [{ actions: [deny] }], allowed: false, closedBy: closedFirst, matched: [true], actions: [[{ type: 'deny' }]] },
  { name: 'deny with a true expression', policy: denyIf('true'), allowed: false, closedBy: closedFirst },
  { name: 'deny with a false expression does nothing', policy: denyIf('false'), allowed: true, matched: [false], actions: [[]] },
  { name: 'expressions are ANDed: all true', policy: [{ expressions: ['1 < 2', "'a' == 'a'"], actions: [deny] }], allowed: false, closedBy: closedFirst },
  { name: 'expressions are ANDed: one false', policy: [{ expressions: ['1 < 2', "'a' == 'b'"], actions: [deny] }], allowed: true, matched: [false] },
  {
    name: 'rules run in order: log, then deny',
    policy: [{ actions: [log({ a: 'x' })] }, { actions: [deny] }],
    allowed: false,
    closedBy: { rule: 2, action: 1, type: 'deny' },
    actions: [[{ type: 'log', metadata: { a: 'x' } }], [{ type: 'deny' }]],
  },
  { name: 'nothing after a deny runs', policy: [{ actions: [deny] }, { actions: [log({ a: 'never' })] }], allowed: false, closedBy: closedFirst, matched: [true] },
  {
    name: 'a later deny is not reached when an earlier rule closes',
    policy: [{ expressions: ['true'], actions: [deny] }, { actions: [deny] }],
    allowed: false,
    closedBy: closedFirst,
    matched: [true],
  },
  {
    name: 'log then deny in one rule',
    policy: [{ actions: [log({ k: 'v' }), deny] }],
    allowed: false,
    closedBy: { rule: 1, action: 2, type: 'deny' },
    actions: [[{ type: 'log', metadata: { k: 'v' } }, { type: 'deny' }]],
  },
  {
    name: 'a rule that does not match is skipped, the next one runs',
    policy: [{ expressions: ['false'], actions: [deny] }, { actions: [log({ n: '2' })] }],
    allowed: true,
    matched: [false, true],
    actions: [[], [{ type: 'log', metadata: { n: '2' } }]],
  },
  { name: 'no rule matches: allowed', policy: [...denyIf('false'), ...denyIf('1 == 2')], allowed: true, matched: [false, false] },

  // ── restrict-ips: allow and deny lists, alone and together ──
  { name: 'allow list holding the client', policy: [{ actions: [restrict({ allow: ['203.0.113.0/24'] })] }], allowed: true, actions: [[ipsAllow('203.0.113.0/24')]] },
  {
    name: 'allow list not holding the client closes',
    policy: [{ actions: [restrict({ allow: ['198.51.100.0/24'] })] }],
    allowed: false,
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
    actions: [[ipsDeny('')]],
  },
  {
    name: 'deny list holding the client closes',
    policy: [{ actions: [restrict({ deny: ['203.0.113.0/24'] })] }],
    allowed: false,
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
    actions: [[ipsDeny('203.0.113.0/24')]],
  },
  { name: 'deny list not holding the client allows', policy: [{ actions: [restrict({ deny: ['198.51.100.0/24'] })] }], allowed: true, actions: [[ipsAllow('')]] },
  {
    name: 'both lists: in both, deny wins',
    policy: [{ actions: [restrict({ allow: ['203.0.0.0/16'], deny: ['203.0.113.7/32'] })] }],
    allowed: false,
    actions: [[ipsDeny('203.0.113.7/32')]],
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
  },
  { name: 'both lists: allowed and not denied', policy: [{ actions: [restrict({ allow: ['203.0.0.0/16'], deny: ['198.51.100.0/24'] })] }], allowed: true, actions: [[ipsAllow('203.0.0.0/16')]] },
  {
    name: 'both lists: in neither closes',
    policy: [{ actions: [restrict({ allow: ['198.51.100.0/24'], deny: ['192.0.2.0/24'] })] }],
    allowed: false,
    actions: [[ipsDeny('')]],
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
  },
  {
    name: 'matched_cidr is the most specific range',
    policy: [{ actions: [restrict({ allow: ['203.0.0.0/8', '203.0.113.0/24', '203.0.0.0/16'] })] }],
    allowed: true,
    actions: [[ipsAllow('203.0.113.0/24')]],
  },
  {
    name: 'a deny range nested in an allow range: outside the hole',
    policy: [{ actions: [restrict({ allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] })] }],
    conn: { clientIp: '10.2.0.1' },
    allowed: true,
    actions: [[ipsAllow('10.0.0.0/8')]],
  },
  {
    name: 'a deny range nested in an allow range: inside the hole',
    policy: [{ actions: [restrict({ allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] })] }],
    conn: { clientIp: '10.1.200.1' },
    allowed: false,
    actions: [[ipsDeny('10.1.0.0/16')]],
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
  },
  {
    name: 'enforce false: a deny decision is only recorded',
    policy: [{ actions: [restrict({ allow: ['198.51.100.0/24'], enforce: false })] }, { actions: [log({ after: 'yes' })] }],
    allowed: true,
    actions: [[ipsDeny('', false)], [{ type: 'log', metadata: { after: 'yes' } }]],
  },
  { name: 'enforce false: an allow decision', policy: [{ actions: [restrict({ allow: ['203.0.113.0/24'], enforce: false })] }], allowed: true, actions: [[ipsAllow('203.0.113.0/24', false)]] },
  {
    name: 'enforce false, then a rule acting on actions.ngrok.restrict_ips.action',
    policy: [{ actions: [restrict({ deny: ['203.0.113.0/24'], enforce: false })] }, ...denyIf("actions.ngrok.restrict_ips.action == 'deny'")],
    allowed: false,
    closedBy: { rule: 2, action: 1, type: 'deny' },
  },
  {
    name: 'matched_cidr is visible to a later rule',
    policy: [{ actions: [restrict({ allow: ['203.0.113.0/24'] })] }, { actions: [log({ cidr: '${actions.ngrok.restrict_ips.matched_cidr}', act: '${actions.ngrok.restrict_ips.action}' })] }],
    allowed: true,
    actions: [[ipsAllow('203.0.113.0/24')], [{ type: 'log', metadata: { cidr: '203.0.113.0/24', act: 'allow' } }]],
  },
  { name: 'a /32 holds exactly its address', policy: [{ actions: [restrict({ allow: ['203.0.113.7/32'] })] }], allowed: true, actions: [[ipsAllow('203.0.113.7/32')]] },
  { name: 'a /32 of the next address does not', policy: [{ actions: [restrict({ allow: ['203.0.113.8/32'] })] }], allowed: false, closedBy: { rule: 1, action: 1, type: 'restrict-ips' } },
  { name: '0.0.0.0/0 holds every IPv4 address', policy: [{ actions: [restrict({ allow: ['0.0.0.0/0'] })] }], allowed: true, actions: [[ipsAllow('0.0.0.0/0')]] },
  { name: 'the top IPv4 address in 255.255.255.255/32', policy: [{ actions: [restrict({ deny: ['255.255.255.255/32', '255.255.255.0/24'] })] }], conn: { clientIp: '255.255.255.255' }, allowed: false, actions: [[ipsDeny('255.255.255.255/32')]], closedBy: { rule: 1, action: 1, type: 'restrict-ips' } },
  { name: 'host bits in a CIDR are ignored; matched_cidr as written', policy: [{ actions: [restrict({ allow: ['203.9.9.9/8'] })] }], allowed: true, actions: [[ipsAllow('203.9.9.9/8')]] },
  { name: 'a CIDR listed twice', policy: [{ actions: [restrict({ allow: ['203.0.113.0/24', '203.0.113.0/24'] })] }], allowed: true, actions: [[ipsAllow('203.0.113.0/24')]] },
  {
    name: 'two restrict-ips in one rule: the second closes',
    policy: [{ actions: [restrict({ allow: ['203.0.113.0/24'] }), restrict({ deny: ['203.0.113.7/32'] })] }],
    allowed: false,
    actions: [[ipsAllow('203.0.113.0/24'), ipsDeny('203.0.113.7/32')]],
    closedBy: { rule: 1, action: 2, type: 'restrict-ips' },
  },

  // ── IPv6 and IPv4-mapped addresses ──
  { name: 'IPv6 client in an IPv6 allow range', policy: [{ actions: [restrict({ allow: ['2001:db8::/32'] })] }], conn: { clientIp: '2001:db8:1::5' }, allowed: true, actions: [[ipsAllow('2001:db8::/32')]] },
  {
    name: 'IPv6 client against IPv4-only allow ranges closes',
    policy: [{ actions: [restrict({ allow: ['0.0.0.0/0'] })] }],
    conn: { clientIp: '2001:db8::1' },
    allowed: false,
    actions: [[ipsDeny('')]],
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
  },
  { name: '::/0 holds every IPv6 address', policy: [{ actions: [restrict({ allow: ['::/0'] })] }], conn: { clientIp: 'fe80::1' }, allowed: true, actions: [[ipsAllow('::/0')]] },
  { name: '::/0 does not hold an IPv4 address', policy: [{ actions: [restrict({ allow: ['::/0'] })] }], allowed: false, closedBy: { rule: 1, action: 1, type: 'restrict-ips' } },
  { name: 'IPv6 /128 at the top of the space', policy: [{ actions: [restrict({ deny: ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128'] })] }], conn: { clientIp: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' }, allowed: false, closedBy: { rule: 1, action: 1, type: 'restrict-ips' } },
  { name: 'IPv6 most specific match', policy: [{ actions: [restrict({ allow: ['2001:db8::/32', '2001:db8:1::/48', '::/0'] })] }], conn: { clientIp: '2001:db8:1:2::3' }, allowed: true, actions: [[ipsAllow('2001:db8:1::/48')]] },
  { name: 'an IPv4-mapped client matches an IPv4 allow range', policy: [{ actions: [restrict({ allow: ['203.0.113.0/24'] })] }], conn: { clientIp: '::ffff:203.0.113.7' }, allowed: true, actions: [[ipsAllow('203.0.113.0/24')]] },
  {
    name: 'an IPv4-mapped client matches an IPv4 deny range',
    policy: [{ actions: [restrict({ deny: ['203.0.113.7/32'] })] }],
    conn: { clientIp: '::ffff:203.0.113.7' },
    allowed: false,
    actions: [[ipsDeny('203.0.113.7/32')]],
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
  },
  { name: 'an IPv4-mapped client also matches ::ffff:0:0/96', policy: [{ actions: [restrict({ deny: ['::ffff:0:0/96'] })] }], conn: { clientIp: '::ffff:203.0.113.7' }, allowed: false, actions: [[ipsDeny('::ffff:0:0/96')]], closedBy: { rule: 1, action: 1, type: 'restrict-ips' } },
  { name: 'an IPv4-mapped client written in hex', policy: [{ actions: [restrict({ allow: ['203.0.113.0/24'] })] }], conn: { clientIp: '::ffff:cb00:7107' }, allowed: true, actions: [[ipsAllow('203.0.113.0/24')]] },
  { name: 'an IPv4-mapped client reads as IPv4 in conn.client_ip', policy: denyIf("conn.client_ip == '203.0.113.7'"), conn: { clientIp: '::ffff:203.0.113.7' }, allowed: false, closedBy: closedFirst },
  { name: 'a plain IPv4 client does not match ::ffff:0:0/96', policy: [{ actions: [restrict({ deny: ['::ffff:0:0/96'] })] }], allowed: true, actions: [[ipsAllow('')]] },

  // ── restrict-ips with interpolated entries and run-time problems ──
  {
    name: 'an interpolated allow entry',
    policy: [{ actions: [restrict({ allow: ["${conn.client_ip + '/32'}"] })] }],
    allowed: true,
    actions: [[ipsAllow('203.0.113.7/32')]],
  },
  {
    name: 'an interpolated entry that is not a CIDR is reported and never matches',
    policy: [{ actions: [restrict({ allow: ['${conn.client_ip}'] })] }],
    allowed: false,
    actions: [[ipsDeny('', true, '${"conn.client_ip"} produced "203.0.113.7", which is not a CIDR')]],
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
    errors: [/not a CIDR/],
  },
  {
    name: 'a client address that is not an IP address fails closed',
    policy: [{ actions: [restrict({ deny: ['10.0.0.0/8'] })] }],
    conn: { clientIp: 'not-an-ip' },
    allowed: false,
    closedBy: { rule: 1, action: 1, type: 'restrict-ips' },
    errors: [/not an IP address/],
  },
  {
    name: 'restrict_ips.error is set after a run-time problem',
    policy: [{ actions: [restrict({ deny: ['${conn.server_region}'], enforce: false })] }, ...denyIf("actions.ngrok.restrict_ips.error.code == 'ERR_NGROK_2217' && actions.ngrok.restrict_ips.error.message.contains('not a CIDR')")],
    allowed: false,
    closedBy: { rule: 2, action: 1, type: 'deny' },
    errors: [/not a CIDR/],
  },

  // ── log and interpolation ──
  { name: 'log with fixed metadata', policy: [{ actions: [log({ team: 'ops', level: 3, on: true, none: null })] }], allowed: true, actions: [[{ type: 'log', metadata: { team: 'ops', level: 3, on: true, none: null } }]] },
  { name: 'log interpolating the client address', policy: [{ actions: [log({ ip: '${conn.client_ip}' })] }], allowed: true, actions: [[{ type: 'log', metadata: { ip: '203.0.113.7' } }]] },
  {
    name: 'interpolations inside text',
    policy: [{ actions: [log({ peer: 'ip=${conn.client_ip} port=${conn.client_port}!' })] }],
    allowed: true,
    actions: [[{ type: 'log', metadata: { peer: 'ip=203.0.113.7 port=51000!' } }]],
  },
  { name: 'an int interpolates in decimal', policy: [{ actions: [log({ p: '${conn.server_port * 2}' })] }], allowed: true, actions: [[{ type: 'log', metadata: { p: '886' } }]] },
  { name: 'a timestamp interpolates in RFC 3339', policy: [{ actions: [log({ t: '${conn.ts.start}' })] }], allowed: true, actions: [[{ type: 'log', metadata: { t: '2024-01-02T03:04:05.000Z' } }]] },
  { name: 'a bool interpolates as true/false', policy: [{ actions: [log({ b: '${conn.client_port > 1024}' })] }], allowed: true, actions: [[{ type: 'log', metadata: { b: 'true' } }]] },
  { name: 'a double interpolates as a number', policy: [{ actions: [log({ d: '${double(conn.client_port) / 4.0}' })] }], allowed: true, actions: [[{ type: 'log', metadata: { d: '12750' } }]] },
  { name: 'a list interpolates as JSON', policy: [{ actions: [log({ l: '${[conn.client_port, conn.server_port]}', m: "${{'r': conn.server_region}}" })] }], allowed: true, actions: [[{ type: 'log', metadata: { l: '[51000,443]', m: '{"r":"eu"}' } }]] },
  { name: 'braces and quotes inside an interpolation', policy: [{ actions: [log({ m: "${ {'k': '}'}['k'] }" })] }], allowed: true, actions: [[{ type: 'log', metadata: { m: '}' } }]] },
  {
    name: 'interpolation in nested metadata',
    policy: [{ actions: [log({ peer: { ip: '${conn.client_ip}', ports: ['${conn.client_port}', 7] }, fixed: { a: 'b' } })] }],
    allowed: true,
    actions: [[{ type: 'log', metadata: { peer: { ip: '203.0.113.7', ports: ['51000', 7] }, fixed: { a: 'b' } } }]],
  },
  {
    name: 'a failing interpolation becomes "" and is reported; the rule goes on',
    policy: [{ actions: [log({ bad: 'x${1 / 0}y', good: '${conn.server_region}' }), deny] }],
    allowed: false,
    closedBy: { rule: 1, action: 2, type: 'deny' },
    actions: [[{ type: 'log', metadata: { bad: 'xy', good: 'eu' }, error: '${"1 / 0"}: division by zero' }, { type: 'deny' }]],
    errors: [/division by zero/],
  },
  {
    name: 'actions.ngrok.log.metadata is visible to a later rule',
    policy: [{ actions: [log({ who: '${conn.client_ip}' })] }, ...denyIf("actions.ngrok.log.metadata['who'] == '203.0.113.7'")],
    allowed: false,
    closedBy: { rule: 2, action: 1, type: 'deny' },
  },
  {
    name: 'actions.ngrok.log.metadata holds the last log only',
    policy: [{ actions: [log({ a: '1' }), log({ b: '2' })] }, ...denyIf("!('a' in actions.ngrok.log.metadata) && 'b' in actions.ngrok.log.metadata")],
    allowed: false,
    closedBy: { rule: 2, action: 1, type: 'deny' },
  },
  { name: 'a metadata key "__proto__" stays data', policy: '{"on_tcp_connect":[{"actions":[{"type":"log","config":{"metadata":{"__proto__":"${conn.server_region}"}}}]}]}', allowed: true, actions: [[{ type: 'log', metadata: JSON.parse('{"__proto__":"eu"}') as { [k: string]: string } }]] },

  // ── every variable of the environment ──
  { name: 'conn.client_ip', policy: denyIf("conn.client_ip == '203.0.113.7'"), allowed: false, closedBy: closedFirst },
  { name: 'conn.client_port is an int', policy: denyIf('conn.client_port == 51000'), allowed: false, closedBy: closedFirst },
  { name: 'conn.server_ip', policy: denyIf("conn.server_ip == '192.0.2.10'"), allowed: false, closedBy: closedFirst },
  { name: 'conn.server_ip of an IPv4-mapped socket address is the IPv4 text', policy: denyIf("conn.server_ip == '192.0.2.10'"), conn: { serverIp: '::ffff:192.0.2.10' }, allowed: false, closedBy: closedFirst },
  { name: 'conn.server_port', policy: denyIf('conn.server_port == 443'), allowed: false, closedBy: closedFirst },
  { name: 'conn.server_region', policy: denyIf("conn.server_region == 'eu'"), allowed: false, closedBy: closedFirst },
  { name: 'conn.ts.start is a timestamp', policy: denyIf("conn.ts.start == timestamp('2024-01-02T03:04:05Z')"), allowed: false, closedBy: closedFirst },
  { name: 'conn.ts.start from a Date', policy: denyIf('conn.ts.start.getFullYear() == 2024'), conn: { startedAt: new Date(START) }, allowed: false, closedBy: closedFirst },
  { name: 'conn.geo.country_code is empty', policy: denyIf("conn.geo.country_code == ''"), allowed: false, closedBy: closedFirst },
  {
    name: 'every other conn.geo field is empty',
    policy: denyIf("conn.geo.city + conn.geo.country + conn.geo.latitude + conn.geo.longitude + conn.geo.radius + conn.geo.subdivision == ''"),
    allowed: false,
    closedBy: closedFirst,
  },
  { name: 'endpoint.addr', policy: denyIf("endpoint.addr == 'app.example.com:443'"), allowed: false, closedBy: closedFirst },
  { name: 'endpoint.host', policy: denyIf("endpoint.host == 'app.example.com'"), allowed: false, closedBy: closedFirst },
  { name: 'endpoint.id', policy: denyIf("endpoint.id == 'edghts_123'"), allowed: false, closedBy: closedFirst },
  { name: 'endpoint.url', policy: denyIf("endpoint.url == 'tls://app.example.com:443'"), allowed: false, closedBy: closedFirst },
  { name: 'endpoint.protocol', policy: denyIf("endpoint.protocol == 'tls'"), allowed: false, closedBy: closedFirst },
  { name: 'endpoint.port', policy: denyIf('endpoint.port == 443'), allowed: false, closedBy: closedFirst },
  { name: 'endpoint fields not given read as "" and 0', policy: denyIf("endpoint.host == '' && endpoint.id == '' && endpoint.port == 0"), conn: { endpoint: {} }, allowed: false, closedBy: closedFirst },
  { name: 'time.now is RFC 3339 in UTC, whole seconds', policy: denyIf("time.now == '2024-01-02T03:04:06Z'"), allowed: false, closedBy: closedFirst },
  { name: 'time.now as a timestamp is after conn.ts.start', policy: denyIf('timestamp(time.now) - conn.ts.start == duration("1s")'), allowed: false, closedBy: closedFirst },
  { name: 'time.now from a Date', policy: denyIf("time.now.startsWith('2030-')"), conn: { now: new Date('2030-05-06T07:08:09Z') }, allowed: false, closedBy: closedFirst },
  {
    name: 'actions.ngrok.restrict_ips.* start empty',
    policy: denyIf("actions.ngrok.restrict_ips.action == '' && actions.ngrok.restrict_ips.matched_cidr == '' && actions.ngrok.restrict_ips.error.code == '' && actions.ngrok.restrict_ips.error.message == ''"),
    allowed: false,
    closedBy: closedFirst,
  },
  { name: 'actions.ngrok.log.metadata starts empty', policy: denyIf('size(actions.ngrok.log.metadata) == 0'), allowed: false, closedBy: closedFirst },

  // ── functions ──
  { name: 'inCidrRange true', policy: denyIf("inCidrRange(conn.client_ip, '203.0.113.0/24')"), allowed: false, closedBy: closedFirst },
  { name: 'inCidrRange false', policy: denyIf("inCidrRange(conn.client_ip, '198.51.100.0/24')"), allowed: true, matched: [false] },
  { name: 'inCidrRange with an invalid CIDR is false, not an error', policy: denyIf("!inCidrRange(conn.client_ip, 'nonsense')"), allowed: false, closedBy: closedFirst },
  { name: 'inCidrRange with IPv6', policy: denyIf("inCidrRange(conn.client_ip, '2001:db8::/32')"), conn: { clientIp: '2001:db8::9' }, allowed: false, closedBy: closedFirst },
  { name: 'inCidrRange with a mapped client', policy: denyIf("inCidrRange(conn.client_ip, '203.0.113.0/24')"), conn: { clientIp: '::ffff:203.0.113.7' }, allowed: false, closedBy: closedFirst },
  { name: 'inCidrRanges true', policy: denyIf("inCidrRanges(conn.client_ip, ['10.0.0.0/8', '203.0.113.0/24'])"), allowed: false, closedBy: closedFirst },
  { name: 'inCidrRanges false', policy: denyIf("inCidrRanges(conn.client_ip, ['10.0.0.0/8', 'bad', '::/0'])"), allowed: true, matched: [false] },
  { name: 'inCidrRanges with an empty list', policy: denyIf('inCidrRanges(conn.client_ip, [])'), allowed: true, matched: [false] },
  { name: 'matches (RE2)', policy: denyIf("conn.client_ip.matches('^203[.]0[.]113[.][0-9]+$')"), allowed: false, closedBy: closedFirst },
  { name: 'matches is a partial match', policy: denyIf("endpoint.host.matches('example')"), allowed: false, closedBy: closedFirst },
  { name: 'matches false', policy: denyIf("conn.client_ip.matches('^10[.]')"), allowed: true, matched: [false] },
  { name: 'matches in its global form', policy: denyIf("matches(conn.client_ip, '^203[.]') && !matches(endpoint.host, '^10')"), allowed: false, closedBy: closedFirst },
  { name: 'matches with RE2 classes and flags', policy: denyIf("endpoint.host.matches('(?i)^APP\\\\.[[:alpha:]]+\\\\.COM$')"), allowed: false, closedBy: closedFirst },
  {
    name: 'matches with a computed pattern RE2 refuses is a run-time error',
    policy: [{ expressions: ["endpoint.host.matches(conn.server_region + '(?=x)')"], actions: [deny] }, { actions: [log({ next: 'ran' })] }],
    allowed: true,
    matched: [false, true],
    errors: [/not valid RE2 syntax/],
  },
  { name: 'standard string functions', policy: denyIf("endpoint.host.endsWith('.example.com') && conn.server_region.startsWith('e') && size(endpoint.id) == 10"), allowed: false, closedBy: closedFirst },
  { name: 'macros over lists', policy: denyIf("[80, 443].exists(p, p == conn.server_port)"), allowed: false, closedBy: closedFirst },

  // ── run-time errors count as false and are reported ──
  { name: 'division by zero', policy: [...denyIf('conn.client_port / 0 == 1'), { actions: [log({ n: '2' })] }], allowed: true, matched: [false, true], errors: [/division by zero/] },
  { name: 'a list index out of range', policy: denyIf('[1, 2][conn.server_port] == 1'), allowed: true, matched: [false], errors: [/index out of bounds/] },
  { name: 'a missing map key', policy: denyIf("actions.ngrok.log.metadata['absent'] == 'x'"), allowed: true, matched: [false], errors: [/No such key: absent/] },
  { name: 'a failed conversion', policy: denyIf("int(conn.server_region) == 1"), allowed: true, matched: [false], errors: [/int/] },
  { name: 'an error is not rescued by a later expression', policy: [{ expressions: ['1 / 0 == 0', 'true'], actions: [deny] }], allowed: true, matched: [false], errors: [/division by zero/] },
  {
    name: 'an error in rule 1 does not stop rule 2',
    policy: [...denyIf('1 % 0 == 0'), ...denyIf('true')],
    allowed: false,
    matched: [false, true],
    closedBy: { rule: 2, action: 1, type: 'deny' },
    errors: [/modulo by zero/],
  },
  { name: 'an error short-circuited away by || is no error', policy: denyIf('true || 1 / 0 == 0'), allowed: false, closedBy: closedFirst },

  // ── phases and empty policies ──
  { name: 'the legacy inbound phase', policy: JSON.stringify({ inbound: [{ actions: [{ type: 'deny' }] }] }), allowed: false, closedBy: closedFirst },
  { name: 'the legacy inbound phase with restrict-ips', policy: 'inbound:\n  - actions:\n      - type: restrict-ips\n        config: {allow: ["203.0.113.0/24"]}\n', allowed: true, actions: [[ipsAllow('203.0.113.0/24')]] },
  { name: 'an empty document', policy: '', allowed: true, matched: [] },
  { name: 'an empty mapping', policy: '{}', allowed: true, matched: [] },
  { name: 'an empty rule list', policy: 'on_tcp_connect: []', allowed: true, matched: [] },
  { name: 'a null phase', policy: 'on_tcp_connect:\n', allowed: true, matched: [] },
  { name: 'a YAML document with comments only', policy: '# nothing yet\n', allowed: true, matched: [] },
];

describe('evaluate: table', () => {
  test('has at least 80 cases', () => assert.ok(cases.length >= 80, String(cases.length)));
  for (const c of cases) {
    test(c.name, () => {
      const verdict = run(c.policy, c.conn);
      assert.equal(verdict.allowed, c.allowed, JSON.stringify(verdict));
      assert.deepEqual(verdict.closedBy && { rule: verdict.closedBy.rule, action: verdict.closedBy.action, type: verdict.closedBy.type }, c.closedBy);
      if (c.matched) assert.deepEqual(verdict.rules.map((r) => r.matched), c.matched);
      if (c.actions) assert.deepEqual(verdict.rules.map((r) => r.actions), c.actions);
      const expected = c.errors ?? [];
      assert.equal(verdict.errors.length, expected.length, JSON.stringify(verdict.errors));
      expected.forEach((pattern, i) => assert.match(verdict.errors[i]!.message, pattern));
    });
  }
});

describe('evaluate: documents that do not compile', () => {
  test('a policy with only HTTP phases is refused (2230), as validation does', () => {
    const result = compilePolicy('on_http_request:\n  - actions: [{type: deny}]\n');
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2230');
    const validation = validatePolicy('on_http_request:\n  - actions: [{type: deny}]\n');
    assert.ok(!validation.ok);
    assert.equal(result.error.message, validation.error.message);
  });

  test('maxRules is honoured', () => {
    const result = compilePolicy(document([{ actions: [deny] }, { actions: [deny] }]), { maxRules: 1 });
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2264');
  });

  test('a literal pattern RE2 refuses is refused at validation (2200)', () => {
    for (const pattern of ['(a)\\\\1', '(?=a)', '(?<!a)b']) {
      for (const expression of [`endpoint.host.matches('${pattern}')`, `matches(endpoint.host, '${pattern}')`]) {
        const result = compilePolicy(document(denyIf(expression)));
        assert.ok(!result.ok, expression);
        assert.equal(result.error.code, 'ERR_NGROK_2200');
        assert.match(result.error.message, /not valid RE2 syntax/);
      }
    }
    const wrongType = compilePolicy(document(denyIf("matches(conn.client_port, 'a')")));
    assert.ok(!wrongType.ok);
    assert.equal(wrongType.error.code, 'ERR_NGROK_2200');
  });
});

describe('evaluate: reports', () => {
  test('a rule error names the expression and stays one line', () => {
    const verdict = run([{ name: 'Div', expressions: ['true', 'conn.client_port / 0 == 1'], actions: [deny] }]);
    assert.deepEqual(verdict.errors, [{ rule: 1, name: 'Div', at: 'expression 2', message: '"conn.client_port / 0 == 1": division by zero' }]);
    assert.equal(verdict.rules[0]!.error, 'expression 2 ("conn.client_port / 0 == 1": division by zero)');
  });

  test('closedBy names the rule', () => {
    const verdict = run([{ name: 'Block', actions: [deny] }]);
    assert.deepEqual(verdict.closedBy, { rule: 1, name: 'Block', action: 1, type: 'deny' });
  });
});
