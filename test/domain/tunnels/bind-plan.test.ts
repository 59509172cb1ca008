import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentRefusal } from '../../../src/domain/tunnels/agent-errors.js';
import {
  planBind,
  planLabeled,
  poolRefusal,
  takenRefusal,
  type AcceptedBind,
  type BindingSession,
  type BindPlan,
  type BindRequestFacts,
  type BindRules,
} from '../../../src/domain/tunnels/bind-plan.js';
import { rebindToken } from '../../../src/domain/tunnels/tokens.js';

const rules: BindRules = {
  edge: { edgeDomain: 'burrow.localhost', publicHost: '127.0.0.1', tcpPorts: [{ first: 20000, last: 20009 }], region: 'local', httpPort: 8081, tlsPort: 8443 },
  maxEndpointsPerSession: 3,
  maxPolicyRules: 10,
};
const NOW = '2026-11-28T00:00:00.000Z';
const session = (over: Partial<BindingSession> = {}): BindingSession => ({
  id: 'ts_1',
  accountId: 'acct_1',
  instanceId: 'inst_1',
  principalId: 'usr_1',
  tokenHash: 'hash',
  credentialId: 'cr_1',
  acl: [],
  tunnelCount: 0,
  ...over,
});
const request = (over: Partial<BindRequestFacts> = {}): BindRequestFacts => ({
  id: '',
  token: '',
  proto: 'https',
  hostname: '',
  domain: '',
  subdomain: '',
  addr: '',
  trafficPolicy: null,
  ipRestriction: null,
  otherOptions: [],
  ipPolicyRef: '',
  bindings: [],
  poolingEnabled: false,
  forwardsTo: 'localhost:3000',
  metadata: 'm',
  ...over,
});

function refusalOf(plan: BindPlan | ReturnType<typeof planLabeled>): AgentRefusal {
  assert.ok(plan.refusal, 'expected a refusal');
  return plan.refusal;
}

function accepted(plan: BindPlan): AcceptedBind {
  assert.equal(plan.refusal, undefined, plan.refusal?.message);
  return plan as AcceptedBind;
}

const plan = (req: Partial<BindRequestFacts>, over: Partial<BindingSession> = {}, served = false) => planBind(request(req), session(over), rules, served, NOW);

// Every refusal code of TUNNELS.md §3 (and those the plan adds before it) from the planner.
const refusals: Array<[string, Partial<BindRequestFacts>, Partial<BindingSession>, number]> = [
  ['an unknown protocol', { proto: 'udp' }, {}, 301],
  ['the session at its endpoint limit', {}, { tunnelCount: 3 }, 324],
  ['a revoked credential', {}, { acl: undefined }, 300],
  ['an option burrow does not serve', { otherOptions: ['WebsocketTCPConverter'] }, {}, 301],
  ['TLSTermination on an https bind', { proto: 'https', otherOptions: ['TLSTermination'] }, {}, 301],
  ['MutualTLSCA on a plain http bind', { proto: 'http', otherOptions: ['MutualTLSCA'] }, {}, 301],
  ['MutualTLSAtEdge on a tcp bind', { proto: 'tcp', otherOptions: ['MutualTLSAtEdge'] }, {}, 301],
  ['OAuth on a tcp bind (edge logins see HTTP requests only)', { proto: 'tcp', otherOptions: ['OAuth'] }, {}, 301],
  ['an IP policy reference', { ipPolicyRef: 'ipp_1' }, {}, 301],
  ['an internal binding', { bindings: ['internal'] }, {}, 301],
  ['an invalid hostname', { hostname: 'localhost' }, {}, 326],
  ['a hostname the ACL does not permit', { hostname: 'x.other.com' }, { acl: ['bind:*.example.com'] }, 316],
  ['a generated name the ACL does not cover', {}, { acl: ['bind:*.example.com'] }, 316],
  ['a tcp address burrow does not serve', { proto: 'tcp', addr: '127.0.0.1:30000' }, {}, 307],
  ['a tcp address the ACL does not permit', { proto: 'tcp', addr: '127.0.0.1:20001' }, { acl: ['bind:127.0.0.1:20002'] }, 308],
  ['a random tcp address under a restricted ACL', { proto: 'tcp' }, { acl: ['bind:127.0.0.1:20002'] }, 356],
  ['an invalid traffic policy', { proto: 'tcp', trafficPolicy: 'on_http_request: [{actions: [{type: deny}]}]' }, {}, 2230],
];
for (const [name, req, over, code] of refusals) {
  test(`bind plan refuses ${name} (${code})`, () => {
    assert.equal(refusalOf(plan(req, over)).code, code);
  });
}

test('bind plan: a protocol whose listener is off is refused with no code', () => {
  const refused = refusalOf(planBind(request({ proto: 'http' }), session(), { ...rules, edge: { ...rules.edge, httpPort: undefined } }, false, NOW));
  assert.equal(refused.code, 0);
  assert.match(refused.message, /EDGE_HTTP_PORT=0/);
});

test('bind plan: refusals come in the order of the rules (the limit before the ACL, the target before the policy)', () => {
  assert.equal(refusalOf(plan({ hostname: 'x.other.com' }, { tunnelCount: 3, acl: ['bind:a.example.com'] })).code, 324);
  assert.equal(refusalOf(plan({ hostname: 'x.other.com', otherOptions: ['WebsocketTCPConverter'] }, { acl: ['bind:a.example.com'] })).code, 301);
  assert.equal(refusalOf(plan({ hostname: 'x.other.com', trafficPolicy: '{"on_tcp_connect": 1}' }, { acl: ['bind:a.example.com'] })).code, 316);
  // no limit when it is 0
  accepted(planBind(request(), session({ tunnelCount: 99 }), { ...rules, maxEndpointsPerSession: 0 }, false, NOW));
});

test('bind plan: another account holding the target (320 / 309), and a second bind of one URL (334)', () => {
  assert.equal(takenRefusal({ kind: 'hostname', hostname: 'a.example.com' }, 'acct_2', rules.edge).code, 320);
  const taken = takenRefusal({ kind: 'tcp', port: 20001 }, 'acct_2', rules.edge);
  assert.equal(taken.code, 309);
  assert.match(taken.message, /address 127\.0\.0\.1:20001 for the account acct_2/);
  const url = 'https://a.example.com:8443';
  assert.equal(poolRefusal(url, true, undefined), undefined);
  assert.equal(poolRefusal(url, true, { poolingEnabled: true }), undefined);
  assert.equal(poolRefusal(url, true, { poolingEnabled: false })?.code, 334);
  assert.equal(poolRefusal(url, false, { poolingEnabled: true })?.code, 334);
  const rival = poolRefusal(url, true, undefined, { url: 'tls://a.example.com:8443', online: true });
  assert.equal(rival?.code, 334);
  assert.match(rival!.message, /tls:\/\/a\.example\.com:8443 is already online/);
  assert.equal(poolRefusal(url, true, undefined, { url: 'tls://a.example.com:8443', online: false }), undefined);
});

test('bind plan: the rows to write and the answer, for a hostname', () => {
  const bind = accepted(plan({ hostname: 'App.Example.com', trafficPolicy: 'on_tcp_connect: []', poolingEnabled: true }));
  assert.equal(bind.choices.length, 1);
  const [choice] = bind.choices;
  assert.ok(choice && 'target' in choice);
  assert.deepEqual(choice.target, { kind: 'hostname', proto: 'https', hostname: 'app.example.com' });
  assert.match(bind.tunnelId, /^tn_/);
  const placed = bind.place({ kind: 'hostname', proto: 'https', hostname: 'app.example.com' });
  assert.equal(placed.url, 'https://app.example.com:8443');
  assert.equal(placed.rival, 'tls://app.example.com:8443');
  assert.deepEqual(placed.boundOpts, { hostname: 'app.example.com' });
  assert.equal(placed.token, rebindToken('hash', bind.tunnelId, { kind: 'hostname', hostname: 'app.example.com' }));
  const { id, ...endpoint } = placed.endpoint;
  assert.match(id, /^ep_/);
  assert.deepEqual(endpoint, {
    accountId: 'acct_1',
    instanceId: 'inst_1',
    sessionId: 'ts_1',
    url: 'https://app.example.com:8443',
    proto: 'https',
    host: 'app.example.com',
    port: 8443,
    principalId: 'usr_1',
    trafficPolicy: 'on_tcp_connect: []',
    poolingEnabled: true,
    createdAt: NOW,
    updatedAt: NOW,
  });
  assert.deepEqual(placed.tunnelRow('ep_x'), {
    id: bind.tunnelId,
    accountId: 'acct_1',
    sessionId: 'ts_1',
    instanceId: 'inst_1',
    proto: 'https',
    publicUrl: 'https://app.example.com:8443',
    labels: null,
    forwardsTo: 'localhost:3000',
    metadata: 'm',
    startedAt: NOW,
    endpointId: 'ep_x',
  });
});

test('bind plan: a random tcp port is placed once claimed; http has no rival', () => {
  const bind = accepted(plan({ proto: 'tcp' }));
  assert.deepEqual(bind.choices, [{ target: { kind: 'tcp', port: undefined }, remembered: false }]);
  const placed = bind.place({ kind: 'tcp', port: 20004 });
  assert.equal(placed.url, 'tcp://127.0.0.1:20004');
  assert.deepEqual(placed.boundOpts, { addr: '127.0.0.1:20004' });
  assert.equal(placed.endpoint.port, 20004);
  assert.equal(placed.rival, undefined);
  assert.equal(accepted(plan({ proto: 'http', hostname: 'a.example.com' })).place({ kind: 'hostname', proto: 'http', hostname: 'a.example.com' }).rival, undefined);
});

test('bind plan: a rebind with its Token keeps its id and tries its old target first', () => {
  const token = rebindToken('hash', 'tn_old', { kind: 'hostname', hostname: 'kept.example.com' });
  const bind = accepted(plan({ id: 'tn_old', token }, { acl: ['bind:*.example.com', 'bind:*.burrow.localhost'] }));
  assert.equal(bind.tunnelId, 'tn_old');
  assert.equal(bind.choices.length, 2);
  assert.deepEqual(bind.choices[0], { target: { kind: 'hostname', proto: 'https', hostname: 'kept.example.com' }, remembered: true });
  assert.ok(bind.choices[1] && 'target' in bind.choices[1] && bind.choices[1].remembered === false);
  // the old target no longer permitted: the bind's own, as for a first bind
  const narrowed = accepted(plan({ id: 'tn_old', token }, { acl: ['bind:*.burrow.localhost'] }));
  assert.equal(narrowed.choices.length, 1);
  // the old one permitted, the bind's own refused: tried, and its refusal if the old one is taken
  const own = accepted(plan({ id: 'tn_old', token }, { acl: ['bind:kept.example.com'] }));
  assert.equal(own.choices.length, 2);
  assert.ok(own.choices[1] && 'refusal' in own.choices[1] && own.choices[1].refusal.code === 316);
  // an id served by a session here, a wrong Token, or an id of another kind: a new id
  assert.notEqual(accepted(plan({ id: 'tn_old', token }, {}, true)).tunnelId, 'tn_old');
  assert.notEqual(accepted(plan({ id: 'tn_old', token: 'forged' })).tunnelId, 'tn_old');
  assert.notEqual(accepted(plan({ id: 'ep_old', token })).tunnelId, 'ep_old');
  // a rebind naming its target asks for that one only
  assert.equal(accepted(plan({ id: 'tn_old', token, hostname: 'new.example.com' })).choices.length, 1);
});

test('labeled plan: every label permitted (399), at least one (301), within the limit (324), a live credential (300)', () => {
  const labeled = (labels: Record<string, string>, over: Partial<BindingSession> = {}) => planLabeled({ labels, forwardsTo: 'f', metadata: 'm' }, session(over), rules, NOW);
  const refused = refusalOf(labeled({ env: 'prod', team: 'b' }, { acl: ['bind:env=prod'] }));
  assert.equal(refused.code, 399);
  assert.match(refused.message, /Label: team=b$/);
  assert.equal(refusalOf(labeled({})).code, 301);
  assert.equal(refusalOf(labeled({ a: 'b' }, { tunnelCount: 3 })).code, 324);
  assert.equal(refusalOf(labeled({ a: 'b' }, { acl: undefined })).code, 300);
  const ok = labeled({ env: 'prod' }, { acl: ['bind:env=*'] });
  assert.ok(!ok.refusal);
  assert.match(ok.row.id, /^tn_/);
  assert.deepEqual({ ...ok.row, id: '' }, {
    id: '',
    accountId: 'acct_1',
    sessionId: 'ts_1',
    instanceId: 'inst_1',
    proto: '',
    publicUrl: null,
    labels: { env: 'prod' },
    forwardsTo: 'f',
    metadata: 'm',
    startedAt: NOW,
    endpointId: null,
  });
});

test('bind plan: options served as rules (HTTP-POLICY.md §4) pass on http and https, and stay refused by name elsewhere', () => {
  const basicAuth = { BasicAuth: { credentials: [{ username: 'admin', cleartext_password: 's3cretpass' }] } };
  accepted(plan({ proto: 'https', otherOptions: ['BasicAuth'], endpointOptions: basicAuth }));
  const refused = refusalOf(plan({ proto: 'tls', hostname: 'a.example.com', otherOptions: ['BasicAuth'], endpointOptions: basicAuth }));
  assert.equal(refused.code, 301);
  assert.match(refused.message, /BasicAuth/);
});

test('bind plan: WebhookVerification is served as a rule on http and https, refused by name on tcp', () => {
  const webhook = { WebhookVerification: { provider: 'github', secret: 'gh-secret' } };
  accepted(plan({ proto: 'https', otherOptions: ['WebhookVerification'], endpointOptions: webhook }));
  accepted(plan({ proto: 'http', otherOptions: ['WebhookVerification'], endpointOptions: webhook }));
  const refused = refusalOf(plan({ proto: 'tcp', hostname: '', otherOptions: ['WebhookVerification'], endpointOptions: webhook }));
  assert.equal(refused.code, 301);
  assert.match(refused.message, /WebhookVerification/);
  assert.doesNotMatch(refused.message, /gh-secret/);
});
