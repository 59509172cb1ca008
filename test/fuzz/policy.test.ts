// Traffic policy documents through every way in (PUT flat and wrapped, POST and PATCH of an
// edge): YAML and JSON mutated from valid policies, and random policies built from the grammar
// of SPEC §7.3 and sent both as JSON and as YAML. The server's verdict must be the offline
// validator's (the one `burrow policy validate` uses), a stored value comes back byte for byte,
// a rejected one leaves the module as it was, and a document means the same in YAML and JSON.
// FUZZ_RUNS=<n> runs n cases per property instead of the defaults; see world.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { validatePolicy } from '../../src/domain/policy/index.js';
import { nastyString, policyDocument } from './arbitraries.js';
import { World, params, type Outcome, type Req } from './world.js';

let world: World;
before(async () => {
  // This file's world has a PUBLIC_URL with a path: every uri must be built on it.
  world = await World.create({ PUBLIC_URL: 'https://api.example.com/burrow/' });
});
after(() => world.close());

type Route = 'putFlat' | 'putWrapped' | 'createEdge' | 'patchEdge';
const route = fc.constantFrom<Route>('putFlat', 'putWrapped', 'createEdge', 'patchEdge');

function policyRequest(how: Route, edge: 'edgeModule' | 'edgeBare', value: string, enabled: boolean | null): Req {
  const id = world.fixtures[edge].id;
  const module = enabled === null ? { value } : { enabled, value };
  const headers = { authorization: world.auth('admin'), 'service-version': '2', 'content-type': 'application/json' };
  switch (how) {
    case 'putFlat':
      return { method: 'PUT', url: `/edges/tls/${id}/traffic_policy`, headers, payload: JSON.stringify(module) };
    case 'putWrapped':
      return { method: 'PUT', url: `/edges/tls/${id}/traffic_policy`, headers, payload: JSON.stringify({ id, module }) };
    case 'createEdge':
      return { method: 'POST', url: '/edges/tls', headers, payload: JSON.stringify({ traffic_policy: module }) };
    case 'patchEdge':
      return { method: 'PATCH', url: `/edges/tls/${id}`, headers, payload: JSON.stringify({ traffic_policy: module }) };
  }
}

/** The module a successful answer shows, whichever route it came from. */
function shownModule(how: Route, outcome: Outcome): unknown {
  return how === 'putFlat' || how === 'putWrapped' ? outcome.body : outcome.body?.traffic_policy;
}

/** The edge a successful answer concerns, to read its module back. */
function edgeIdOf(how: Route, outcome: Outcome, edge: 'edgeModule' | 'edgeBare'): string {
  return how === 'createEdge' ? String(outcome.body?.id) : world.fixtures[edge].id;
}

async function sendPolicy(how: Route, edge: 'edgeModule' | 'edgeBare', value: string, enabled: boolean | null): Promise<Outcome> {
  const outcome = await world.send(policyRequest(how, edge, value, enabled));
  // A string field with an unpaired surrogate or NUL is refused before it is read as a policy.
  const unstorable = !value.isWellFormed() || value.includes('\u0000');
  const verdict = unstorable
    ? ({ ok: false, error: { code: 'ERR_NGROK_215', message: '' } } as const)
    : validatePolicy(value, { maxRules: world.t.config.maxPolicyRules });
  const context = `${how} ${JSON.stringify(value.slice(0, 300))} -> ${outcome.status} ${outcome.res.body.slice(0, 300)}`;
  if (verdict.ok) {
    assert.ok(outcome.status === 200 || outcome.status === 201, `the validator accepts this policy, the server did not: ${context}`);
    const module = { enabled: enabled ?? true, value };
    assert.deepEqual(shownModule(how, outcome), module, `the answer shows the module as sent: ${context}`);
    const stored = await world.send({
      method: 'GET',
      url: `/edges/tls/${edgeIdOf(how, outcome, edge)}/traffic_policy`,
      headers: { authorization: world.auth('admin'), 'service-version': '2' },
    });
    assert.deepEqual(stored.body, module, `the stored value is byte for byte the one sent: ${context}`);
  } else {
    assert.equal(outcome.status, 400, `the validator refuses this policy (${verdict.error.code}), the server did not: ${context}`);
    assert.equal(outcome.errorCode, verdict.error.code, `another error code than the validator's: ${context}`);
    if (!unstorable) assert.match(outcome.errorCode!, /^ERR_NGROK_22\d\d$/, context);
    assert.match(String((outcome.body!.details as Record<string, string>).param), /(^|\.)value$/, context);
  }
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// Random policies from the grammar of SPEC §7.3, valid and not

/** Mostly valid choices, sometimes an invalid one: documents stay valid often enough to be stored. */
const choice = (valid: readonly string[], invalid: readonly string[]) =>
  fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...valid) }, { weight: 1, arbitrary: fc.constantFrom(...invalid) });

const EXPRESSION = choice(
  [
    "conn.geo.country_code in ['XX', 'YY']",
    "inCidrRange(conn.client_ip, '10.0.0.0/8')",
    "inCidrRanges(conn.client_ip, ['10.0.0.0/8', 'bad'])",
    'conn.client_port == 443 && endpoint.port > 0',
    "conn.ts.start > timestamp('2020-01-01T00:00:00Z')",
    'size(conn.geo.city) > 2',
    'true',
    "actions.ngrok.restrict_ips.action == 'deny'",
  ],
  ["req.url == 'x'", "getReqHeader('x') == 'y'", 'conn.client_port', '1 +', 'conn.client_ip == 1', 'unknown.var', '', '${conn.client_ip}'],
);
const INTERPOLATION = choice(['plain', '${conn.client_ip}', 'at ${conn.ts.start}', '${conn.geo.country_code}-${endpoint.port}', ''], ['${conn.nope}', '${', '${1 +}']);
const CIDR = choice(['10.0.0.0/8', '2001:db8::/32', '0.0.0.0/0', '::/0', '${conn.client_ip}/32', '192.168.1.7/32'], ['10.0.0.0/33', '10.0.0.1', 'x', '${nope}', '']);
const TYPES = ['deny', 'deny', 'deny', 'log', 'log', 'log', 'restrict-ips', 'restrict-ips', 'restrict-ips', 'custom-response', 'rate-limit', 'set-vars', 'nope', '', 'DENY'];
const PHASES = [...Array(12).fill('on_tcp_connect'), 'inbound', 'inbound', 'on_http_request', 'on_http_response', 'outbound', 'on_tcp_connect ', 'other'];

const scalar = fc.oneof(fc.constantFrom(null, true, false, 0, 1.5, -1, 'x', ''), nastyString(8).map((s) => s.replace(/[\ud800-\udfff\u0000]/g, '')));
const maybe = <T>(arbitrary: fc.Arbitrary<T>, weight = 3) => fc.oneof({ weight, arbitrary }, { weight: 1, arbitrary: scalar });
/** Drops `undefined` members, so that optional keys are absent rather than null. */
const compact = (object: Record<string, unknown>) => Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
/** Present with the given odds (out of 10, or out of `of`). */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, odds: number, of = 10) =>
  fc.oneof({ weight: odds, arbitrary }, { weight: of - odds, arbitrary: fc.constant(undefined) });

const config = (type: string): fc.Arbitrary<unknown> => {
  const cidrList = fc.array(fc.oneof({ weight: 12, arbitrary: CIDR }, { weight: 1, arbitrary: scalar }), { maxLength: 3 });
  let shape: fc.Arbitrary<Record<string, unknown>>;
  switch (type) {
    case 'log':
      shape = fc.record({
        metadata: sometimes(maybe(fc.dictionary(fc.constantFrom('a', 'b', 'country', ''), fc.oneof({ weight: 12, arbitrary: INTERPOLATION }, { weight: 1, arbitrary: scalar }), { maxKeys: 3 }), 8), 9),
        extra: sometimes(scalar, 1, 30),
      });
      break;
    case 'restrict-ips':
      shape = fc.record({
        allow: sometimes(maybe(cidrList, 8), 7),
        deny: sometimes(maybe(cidrList, 8), 5),
        enforce: sometimes(fc.oneof({ weight: 4, arbitrary: fc.boolean() }, { weight: 1, arbitrary: scalar }), 4),
        ip_policies: sometimes(fc.constant(['ipp_1']), 1),
      });
      break;
    default:
      shape = fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.record({ status_code: fc.constant(403) }) });
  }
  return fc.oneof({ weight: 12, arbitrary: shape.map(compact) }, { weight: 1, arbitrary: scalar });
};

const action = fc.constantFrom(...TYPES).chain((type) =>
  fc
    .record({
      type: fc.oneof({ weight: 12, arbitrary: fc.constant<unknown>(type) }, { weight: 1, arbitrary: scalar }),
      config: type === 'deny' ? sometimes(config(type), 2) : sometimes(config(type), 9),
      extra: sometimes(scalar, 1, 30),
    })
    .map(compact),
);

const rule = fc
  .record({
    name: sometimes(choice(['r', 'Block some countries', 'x'.repeat(255), 'é'.repeat(127), ''], ['é'.repeat(128), 'x'.repeat(256)]), 5),
    expressions: sometimes(maybe(fc.array(fc.oneof({ weight: 12, arbitrary: EXPRESSION }, { weight: 1, arbitrary: scalar }), { maxLength: 3 }), 10), 6),
    actions: sometimes(maybe(fc.array(action, { minLength: 1, maxLength: 3 }), 12), 9),
    extra: sometimes(scalar, 1, 30),
  })
  .map(compact);

const rules = fc.oneof({ weight: 20, arbitrary: fc.array(fc.oneof({ weight: 20, arbitrary: rule }, { weight: 1, arbitrary: scalar }), { maxLength: 4 }) }, { weight: 1, arbitrary: scalar });

const policyObject = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.tuple(fc.constantFrom('on_tcp_connect', 'on_tcp_connect', 'on_tcp_connect', 'inbound'), rules).map(([phase, list]) => ({ [phase]: list })),
  },
  {
    weight: 3,
    arbitrary: fc.dictionary(
      fc.constantFrom(...PHASES),
      fc.oneof({ weight: 12, arbitrary: fc.array(fc.oneof({ weight: 12, arbitrary: rule }, { weight: 1, arbitrary: scalar }), { maxLength: 4 }) }, { weight: 1, arbitrary: scalar }),
      { minKeys: 1, maxKeys: 2 },
    ),
  },
  { weight: 1, arbitrary: fc.oneof(fc.array(scalar, { maxLength: 2 }), scalar) },
);

describe('traffic policy documents', () => {
  it('mutated YAML and JSON: the server agrees with the validator; a stored value comes back byte for byte', async () => {
    const arbitrary = fc.record({
      how: route,
      edge: fc.constantFrom<'edgeModule' | 'edgeBare'>('edgeModule', 'edgeBare'),
      value: policyDocument,
      enabled: fc.constantFrom(true, false, null),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ how, edge, value, enabled }) => {
        await world.ensureFixtures();
        await sendPolicy(how, edge, value, enabled);
      }),
      params(100, 0x901c01),
    );
  });

  it('policies built from the grammar mean the same in YAML and in JSON', async () => {
    const arbitrary = fc.record({ how: route, policy: policyObject, flow: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ how, policy, flow }) => {
        await world.ensureFixtures();
        const asJson = JSON.stringify(policy, null, flow ? undefined : 2);
        const asYaml = stringify(policy, { version: '1.2', ...(flow ? { collectionStyle: 'flow' as const } : {}) });
        const fromJson = await sendPolicy(how, 'edgeBare', asJson, null);
        await world.ensureFixtures();
        const fromYaml = await sendPolicy(how, 'edgeBare', asYaml, null);
        assert.equal(fromYaml.status, fromJson.status, `YAML and JSON differ:\n${asYaml}\n${asJson}\n${fromYaml.res.body}\n${fromJson.res.body}`);
        assert.equal(fromYaml.errorCode, fromJson.errorCode, `YAML and JSON differ:\n${asYaml}\n${asJson}\n${fromYaml.res.body}\n${fromJson.res.body}`);
      }),
      params(80, 0x901c02),
    );
  });
});
