// @test-pass sqlite
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentRefusal } from '../../../src/domain/tunnels/agent-errors.js';
import { aclRefusalFor, checkLabels, publicUrl, resolveBindTarget, type BindAsk, type EdgeSettings } from '../../../src/domain/tunnels/binds.js';

const edge: EdgeSettings = {
  edgeDomain: 'burrow.localhost',
  publicHost: '127.0.0.1',
  tcpPorts: [{ first: 20000, last: 20009 }],
  region: 'local',
  httpPort: 8081,
  tlsPort: 8443,
};
const credential = (acl: string[]) => ({ id: 'cr_1', accountId: 'acct_1', acl });

function refusal(work: () => unknown): AgentRefusal {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof AgentRefusal, String(error));
    return error;
  }
  assert.fail('expected a refusal');
}

const cases: Array<[string, BindAsk, string[], string | number]> = [
  ['hostname permitted by a wildcard', { proto: 'https', hostname: 'App.Example.com' }, ['bind:*.example.com'], 'app.example.com'],
  ['nested subdomain under a wildcard', { proto: 'http', domain: 'a.b.example.com' }, ['bind:*.example.com'], 'a.b.example.com'],
  ['apex not covered by the wildcard', { proto: 'https', hostname: 'example.com' }, ['bind:*.example.com'], 316],
  ['subdomain under EDGE_DOMAIN', { proto: 'tls', subdomain: 'demo' }, ['bind:demo.burrow.localhost'], 'demo.burrow.localhost'],
  ['generated name needs an ACL covering it', { proto: 'https' }, ['bind:*.example.com'], 316],
  ['generated name under an empty ACL', { proto: 'https' }, [], 'generated'],
  ['invalid hostname', { proto: 'https', hostname: 'localhost' }, [], 326],
  ['the wildcard pattern itself (a wildcard endpoint)', { proto: 'https', hostname: '*.Example.com' }, ['bind:*.example.com'], '*.example.com'],
  ['a narrower wildcard under a wildcard rule', { proto: 'http', domain: '*.a.example.com' }, ['bind:*.example.com'], '*.a.example.com'],
  ['a wildcard endpoint under an empty ACL', { proto: 'tls', hostname: '*.example.com' }, [], '*.example.com'],
  ['a wildcard endpoint under a rule for one name', { proto: 'https', hostname: '*.example.com' }, ['bind:app.example.com'], 316],
  ['a wildcard endpoint under a wildcard one level down', { proto: 'https', hostname: '*.example.com' }, ['bind:*.a.example.com'], 316],
  ['a wildcard subdomain under EDGE_DOMAIN', { proto: 'https', subdomain: '*' }, [], '*.burrow.localhost'],
  ['a wildcard over a single label', { proto: 'https', hostname: '*.com' }, [], 326],
  ['a wildcard in the middle', { proto: 'https', hostname: 'a.*.example.com' }, [], 326],
  ['two wildcards', { proto: 'https', hostname: '*.*.example.com' }, [], 326],
  ['a wildcard over an IPv4 address', { proto: 'https', hostname: '*.1.2.3.4' }, [], 326],
  ['a bare "*"', { proto: 'https', hostname: '*' }, [], 326],
  ['hostname with a port', { proto: 'https', hostname: 'a.example.com:443' }, [], 326],
  ['tcp address permitted', { proto: 'tcp', addr: '127.0.0.1:20005' }, ['bind:127.0.0.1:20005'], 'tcp:20005'],
  ['tcp address not in the ACL', { proto: 'tcp', addr: '127.0.0.1:20006' }, ['bind:127.0.0.1:20005'], 308],
  ['tcp address outside EDGE_TCP_PORTS', { proto: 'tcp', addr: '127.0.0.1:30000' }, [], 307],
  ['tcp address on another host', { proto: 'tcp', addr: '10.0.0.1:20005' }, [], 307],
  ['random tcp under a restricted ACL', { proto: 'tcp' }, ['bind:127.0.0.1:20005'], 356],
  ['random tcp under bind:*', { proto: 'tcp' }, ['bind:*'], 'tcp:random'],
];

for (const [name, ask, acl, expected] of cases) {
  test(`bind: ${name}`, () => {
    if (typeof expected === 'number') {
      assert.equal(refusal(() => resolveBindTarget(ask, credential(acl), edge)).code, expected);
      return;
    }
    const target = resolveBindTarget(ask, credential(acl), edge);
    if (target.kind === 'tcp') assert.equal(`tcp:${target.port ?? 'random'}`, expected);
    else if (expected === 'generated') assert.match(target.hostname, /^[0-9a-z]{12}\.burrow\.localhost$/);
    else assert.equal(target.hostname, expected);
  });
}

test('a protocol whose public listener is off is refused before the ACL is asked (no code: none fits)', () => {
  const off: EdgeSettings = { ...edge, httpPort: undefined, tlsPort: undefined, tcpPorts: [] };
  const cases: Array<[BindAsk, RegExp]> = [
    [{ proto: 'http', hostname: 'a.example.com' }, /no http endpoints \(EDGE_HTTP_PORT=0\)/],
    [{ proto: 'https' }, /no https endpoints \(EDGE_TLS_PORT=0\)/],
    [{ proto: 'tls', hostname: 'a.example.com' }, /no tls endpoints \(EDGE_TLS_PORT=0\)/],
    [{ proto: 'tcp' }, /no tcp endpoints \(EDGE_TCP_PORTS is empty\)/],
  ];
  for (const [ask, message] of cases) {
    const refused = refusal(() => resolveBindTarget(ask, credential(['bind:nothing.example.com']), off));
    assert.equal(refused.code, 0);
    assert.match(refused.message, message);
  }
  // The others still serve.
  assert.equal(resolveBindTarget({ proto: 'https', hostname: 'a.example.com' }, credential([]), { ...edge, httpPort: undefined }).kind, 'hostname');
});

test('refusal messages name the credential and what was refused', () => {
  const name = refusal(() => resolveBindTarget({ proto: 'https', hostname: 'x.other.com' }, credential(['bind:*.example.com']), edge));
  assert.equal(name.message, 'The credential ACL policy does not permit binding this name.\nCredential ID: cr_1\nName: x.other.com');
  const address = refusal(() => resolveBindTarget({ proto: 'tcp', addr: '127.0.0.1:20001' }, credential(['bind:x.example.com']), edge));
  assert.match(address.message, /Address: 127\.0\.0\.1:20001$/);
});

test('labels: every label must be permitted, the first refused is named', () => {
  checkLabels({ env: 'prod', team: 'a' }, credential(['bind:env=*', 'bind:*=a']));
  const refused = refusal(() => checkLabels({ env: 'prod', team: 'b' }, credential(['bind:env=prod'])));
  assert.equal(refused.code, 399);
  assert.match(refused.message, /Label: team=b$/);
  assert.equal(refusal(() => checkLabels({}, credential([]))).code, 301);
});

test('a narrowed ACL refuses the tunnels it no longer permits', () => {
  const narrowed = credential(['bind:keep.example.com']);
  assert.equal(aclRefusalFor({ kind: 'hostname', hostname: 'keep.example.com' }, narrowed, edge), null);
  assert.equal(aclRefusalFor({ kind: 'hostname', hostname: 'gone.example.com' }, narrowed, edge)?.code, 316);
  assert.equal(aclRefusalFor({ kind: 'tcp', port: 20001 }, narrowed, edge)?.code, 308);
  assert.equal(aclRefusalFor({ kind: 'labels', labels: { a: 'b' } }, narrowed, edge)?.code, 399);
});

test('public URLs leave out the default port', () => {
  assert.equal(publicUrl('https', 'a.example.com', 443), 'https://a.example.com');
  assert.equal(publicUrl('https', 'a.example.com', 8443), 'https://a.example.com:8443');
  assert.equal(publicUrl('http', 'a.example.com', 80), 'http://a.example.com');
  assert.equal(publicUrl('tcp', '127.0.0.1', 20001), 'tcp://127.0.0.1:20001');
});
