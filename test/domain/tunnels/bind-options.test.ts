// The bind-option table (domain/tunnels/bind-options.ts) as the protocol layer, the bind plan and
// the policy engine read it, and the edge TLS options (MutualTLSCA, MutualTLSAtEdge, TLSTermination)
// as the plan turns them into settings or refusals. Certificates are made by the test.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BIND_OPTIONS, optionRefusal, optionsServedAs } from '../../../src/domain/tunnels/bind-options.js';
import { planBind, type AcceptedBind, type BindRequestFacts } from '../../../src/domain/tunnels/bind-plan.js';
import { edgeTlsOf, edgeTlsOpts } from '../../../src/domain/tunnels/edge-tls.js';
import { OPTIONS_AS_RULES } from '../../../src/domain/policy/index.js';
import { KNOWN_BIND_OPTIONS, VIEWED_BIND_OPTIONS, decodeBind, echoBindOpts } from '../../../src/tunnels/protocol/bind-messages.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate, type IssuedCertificate } from '../../../src/tunnels/tls/certificates.js';
import { makeTempDir } from '../../helpers/server-process.js';

const rules = {
  edge: { edgeDomain: 'burrow.localhost', publicHost: '127.0.0.1', tcpPorts: [{ first: 20000, last: 20009 }], region: 'local', httpPort: 8081, tlsPort: 8443 },
  maxEndpointsPerSession: 0,
  maxPolicyRules: 10,
};
const session = { id: 'ts_1', accountId: 'acct_1', instanceId: 'inst_1', principalId: 'usr_1', tokenHash: 'h', credentialId: 'cr_1', acl: [], tunnelCount: 0 };

/** A bind as the protocol layer reads it from `opts`, then planned. */
function plan(proto: string, opts: Record<string, unknown>) {
  const bind = decodeBind({ Id: '', Proto: proto, Opts: opts, Extra: {} });
  const facts: BindRequestFacts = {
    id: '',
    token: '',
    proto,
    hostname: bind.options.hostname,
    domain: bind.options.domain,
    subdomain: bind.options.subdomain,
    addr: bind.options.addr,
    trafficPolicy: bind.options.trafficPolicy,
    ipRestriction: bind.options.ipRestriction,
    otherOptions: bind.options.otherOptions,
    ipPolicyRef: '',
    bindings: [],
    poolingEnabled: false,
    forwardsTo: '',
    metadata: '',
    endpointOptions: bind.opts,
  };
  return planBind(facts, session, rules, false, '2026-11-28T00:00:00.000Z');
}

const b64 = (text: string) => Buffer.from(text).toString('base64');
let caPem: string;
let otherCaPem: string;
let leaf: IssuedCertificate;

before(async () => {
  const ca = await loadOrCreateCa(makeTempDir('bind-options-ca-'));
  caPem = ca.certPem;
  otherCaPem = (await loadOrCreateCa(makeTempDir('bind-options-other-'))).certPem;
  leaf = await issueCertificate(ca, { dnsNames: ['app.example.com'] });
});

test('the table: every name once, and the lists of the other layers are its own', () => {
  const names = BIND_OPTIONS.map((spec) => spec.name);
  assert.equal(new Set(names.map((n) => n.toLowerCase())).size, names.length);
  assert.deepEqual([...KNOWN_BIND_OPTIONS], names);
  assert.deepEqual([...VIEWED_BIND_OPTIONS].sort(), ['Addr', 'Domain', 'Hostname', 'IPRestriction', 'ProxyProto', 'Subdomain', 'TrafficPolicy']);
  assert.deepEqual([...OPTIONS_AS_RULES].sort(), ['BasicAuth', 'CircuitBreaker', 'Compression', 'OAuth', 'OIDC', 'RequestHeaders', 'ResponseHeaders', 'UserAgentFilter', 'WebhookVerification']);
  assert.deepEqual([...optionsServedAs('tls')].sort(), ['MutualTLSAtEdge', 'MutualTLSCA', 'TLSTermination']);
});

test('the table: who refuses what, by proto', () => {
  assert.equal(optionRefusal('MutualTLSCA', 'https'), undefined);
  assert.equal(optionRefusal('mutualtlsca', 'http')?.code, 301);
  assert.equal(optionRefusal('TLSTermination', 'tls'), undefined);
  assert.match(optionRefusal('TLSTermination', 'https')!.why, /tls endpoints/);
  assert.equal(optionRefusal('MutualTLSAtAgent', 'tls'), undefined);
  // edge logins: served on http and https, refused where no HTTP request is seen
  assert.equal(optionRefusal('OIDC', 'https'), undefined);
  assert.equal(optionRefusal('OAuth', 'http'), undefined);
  assert.equal(optionRefusal('OIDC', 'tcp')?.code, 301);
  assert.match(optionRefusal('OAuth', 'tls')!.why, /http and https endpoints/);
  assert.equal(optionRefusal('WebsocketTCPConverter', 'https')?.code, 301);
  assert.equal(optionRefusal('BasicAuth', 'https'), undefined);
  assert.equal(optionRefusal('BasicAuth', 'tcp')?.code, 301);
  assert.equal(optionRefusal('SomethingNew', 'tcp'), undefined);
});

test('the BindResp echoes the table\'s spellings', () => {
  const echoed = echoBindOpts('tls', { hostname: 'a', mutualtlsatedge: { mutual_tls_ca: 'QQ==' }, tlstermination: {} }, {});
  assert.ok('MutualTLSAtEdge' in echoed && 'TLSTermination' in echoed);
});

test('MutualTLSCA on https: the bundle\'s CAs become the endpoint\'s client CAs', () => {
  const bind = plan('https', { Hostname: 'app.example.com', MutualTLSCA: { mutual_tls_ca: b64(caPem + otherCaPem) } }) as AcceptedBind;
  assert.equal(bind.refusal, undefined, bind.refusal);
  assert.equal(bind.policy.edgeTls?.clientCas?.length, 2);
  assert.equal(bind.policy.edgeTls?.certificate, undefined);
});

test('TLSTermination and MutualTLSAtEdge on tls: the agent\'s certificate, kept out of any JSON', () => {
  const bind = plan('tls', { Hostname: 'app.example.com', MutualTLSAtAgent: false, TLSTermination: { cert: b64(leaf.certPem), key: b64(leaf.keyPem) }, MutualTLSAtEdge: { mutual_tls_ca: b64(caPem) } }) as AcceptedBind;
  assert.equal(bind.refusal, undefined, bind.refusal);
  const edgeTls = bind.policy.edgeTls!;
  assert.equal(edgeTls.clientCas?.length, 1);
  assert.ok(edgeTls.certificate?.cert.includes('BEGIN CERTIFICATE'));
  assert.equal(edgeTls.certificate?.privateKey(), leaf.keyPem);
  assert.ok(!JSON.stringify(bind.policy).includes('PRIVATE KEY'), 'the key is serialised');
  // `TLSTermination: {}` (ngrok-go's terminate-at-edge without a keypair): burrow's own certificate
  const own = plan('tls', { Hostname: 'app.example.com', TLSTermination: {} }) as AcceptedBind;
  assert.deepEqual(own.policy.edgeTls, {});
  // without the options a tls bind passes TLS through
  assert.equal((plan('tls', { Hostname: 'app.example.com', TLSTermination: null }) as AcceptedBind).policy.edgeTls, undefined);
});

test('edgeTlsOpts: the Opts another instance reads back as the same edge TLS, key included (CLUSTER.md §2)', () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['https', { MutualTLSCA: { mutual_tls_ca: b64(caPem + otherCaPem) } }],
    ['tls', { TLSTermination: { cert: b64(leaf.certPem), key: b64(leaf.keyPem) }, MutualTLSAtEdge: { mutual_tls_ca: b64(caPem) } }],
    ['tls', { TLSTermination: { cert: b64(leaf.certPem), key: b64(leaf.keyPem) } }],
    ['tls', { MutualTLSAtEdge: { mutual_tls_ca: b64(otherCaPem) } }],
    ['tls', { TLSTermination: {} }],
  ];
  for (const [proto, opts] of cases) {
    const edgeTls = (plan(proto, { Hostname: 'app.example.com', ...opts }) as AcceptedBind).policy.edgeTls!;
    assert.ok(edgeTls, JSON.stringify(opts));
    const again = edgeTlsOf(JSON.parse(JSON.stringify(edgeTlsOpts(edgeTls, proto as 'https' | 'tls'))) as Record<string, unknown>, proto as 'https' | 'tls')!;
    assert.deepEqual(again.clientCas, edgeTls.clientCas);
    assert.equal(again.certificate?.cert, edgeTls.certificate?.cert);
    assert.equal(again.certificate?.privateKey(), edgeTls.certificate?.privateKey());
  }
});

const bad: Array<[string, string, Record<string, unknown>, number, RegExp]> = [
  ['a CA bundle without a certificate', 'https', { MutualTLSCA: { mutual_tls_ca: b64('hello') } }, 1922, /MutualTLSCA/],
  ['a CA that is not X.509', 'https', { MutualTLSCA: { mutual_tls_ca: b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n') } }, 1900, /MutualTLSCA/],
  ['a CA bundle that is not base64', 'https', { MutualTLSCA: { mutual_tls_ca: '%%%' } }, 301, /MutualTLSCA/],
  ['MutualTLSAtEdge with garbage', 'tls', { MutualTLSAtEdge: { mutual_tls_ca: b64('junk') } }, 1922, /MutualTLSAtEdge/],
  ['a termination certificate that is not PEM', 'tls', { TLSTermination: { cert: b64('junk'), key: b64('junk') } }, 1919, /TLSTermination/],
  ['a sealed key', 'tls', { TLSTermination: { sealed_key: b64('x') } }, 301, /sealed/],
];
for (const [name, proto, opts, code, message] of bad) {
  test(`bind refused: ${name} (${code})`, () => {
    const refusal = plan(proto, { Hostname: 'app.example.com', ...opts }).refusal;
    assert.ok(refusal, 'expected a refusal');
    assert.equal(refusal.code, code);
    assert.match(refusal.message, message);
  });
}

test('bind refused: a key that is missing, a certificate, garbage, or another certificate\'s; never quoted', async () => {
  const other = await issueCertificate(await loadOrCreateCa(makeTempDir('bind-options-third-')), { dnsNames: ['x.example.com'] });
  const cases: Array<[string, number]> = [
    ['', 1901],
    [leaf.certPem, 1924],
    ['-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n', 1903],
    ['-----BEGIN ENCRYPTED PRIVATE KEY-----\nQUJD\n-----END ENCRYPTED PRIVATE KEY-----\n', 1902],
    [other.keyPem, 1903],
  ];
  for (const [key, code] of cases) {
    const refusal = plan('tls', { Hostname: 'app.example.com', TLSTermination: { cert: b64(leaf.certPem), key: b64(key) } }).refusal;
    assert.equal(refusal?.code, code, key.slice(0, 40));
    assert.match(refusal!.message, /TLSTermination/);
    assert.ok(!refusal!.message.includes('PRIVATE KEY-----\n'), 'the key is quoted');
  }
});
