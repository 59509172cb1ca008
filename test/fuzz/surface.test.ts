// The request surface, everything but the meaning of bodies: the whole SPEC §2 pipeline as an
// oracle (each case picks, for route, auth, version, body framing, query, fields and resource,
// a valid choice or one known fault, and the answer must be the first fault in SPEC order, on
// every endpoint and for every caller); then each step alone with random input: Authorization and
// version headers (near-valid keys, tunnel tokens, revoked keys, repeated headers), Content-Type
// variants and extra headers; query strings (unknown and repeated parameters, encodings,
// limit/before_id/beforeId edge values); paths (unknown routes, other methods, random and
// percent-encoded ids); and raw HTTP/1.1 (repeated headers as a real parser merges them, chunked
// bodies). World.send() checks the invariants of every answer.
// FUZZ_RUNS=<n> runs n cases per property instead of the defaults; see world.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ALLOWED,
  BASE62,
  CREDENTIAL_FIXTURE_LIST,
  EDGE_FIXTURE_LIST,
  ENDPOINTS,
  JSON_CONTENT_TYPES,
  METHODS,
  OTHER_CONTENT_TYPES,
  authSpec,
  contentType,
  headerText,
  idSpec,
  junkId,
  nastyString,
  versionSpec,
  type AuthSpec,
  type Endpoint,
  type IdSpec,
  type VersionSpec,
} from './arbitraries.js';
import { authHeader, authVerdict, describeVerdict, isOk, resolveId, versionHeaders, versionVerdict, visible, type Verdict } from './requests.js';
import { DENY_POLICY, World, decodePathSegment, decodeUnreserved, params, serverUrl, type CallerName, type EdgeFixture, type Fixture, type Outcome, type Req } from './world.js';

let world: World;
before(async () => {
  world = await World.create();
});
after(() => world.close());

// ---------------------------------------------------------------------------------------------
// The pipeline as an oracle

const TEMPLATES = Object.keys(ALLOWED).filter((template) => template.startsWith('/credentials') || template.startsWith('/edges'));
const ORACLE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND'];

type BodyKind =
  | 'none'
  | 'emptyWithType'
  | 'valid'
  | 'noType'
  | 'otherType'
  | 'invalidJson'
  | 'invalidUtf8'
  | 'notObject'
  | 'unknownField'
  | 'wrongType'
  | 'tooLarge'
  | 'typeOnly'
  | 'bodyOnRead';

interface BodyCase {
  kind: BodyKind;
  contentType?: string | undefined;
  payload?: string | Buffer | undefined;
}

type QueryKind = 'none' | 'unknown' | 'unknownTwice' | 'limitOk' | 'limitBad' | 'limitTwice' | 'beforeOk' | 'beforeWrongKind' | 'beforeBoth' | 'beforeEmptyCamel';

interface QueryCase {
  kind: QueryKind;
  text: string;
}

interface Case {
  template: string;
  method: string;
  id: IdSpec;
  auth: AuthSpec;
  version: VersionSpec;
  body: BodyCase;
  query: QueryCase;
}

const simpleVersion: fc.Arbitrary<VersionSpec> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ service: '2', serviceName: 'service-version', ngrokName: 'ngrok-version' }) },
  { weight: 1, arbitrary: fc.constant({ ngrok: '2', serviceName: 'service-version', ngrokName: 'Ngrok-Version' }) },
  { weight: 1, arbitrary: fc.constant({ service: '2', ngrok: '2', serviceName: 'Service-Version', ngrokName: 'ngrok-version' }) },
  { weight: 1, arbitrary: fc.constant({ serviceName: 'service-version', ngrokName: 'ngrok-version' }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('', '1', '3', '2.0', 'v2', '02').map((value) => ({ service: value, serviceName: 'service-version', ngrokName: 'ngrok-version' })),
  },
  { weight: 1, arbitrary: fc.constant({ service: '2', ngrok: '3', serviceName: 'service-version', ngrokName: 'ngrok-version' }) },
);

/** Per body route: bodies that pass, and ones that fail at the fields step with 214 or 215. */
const VALID_BODIES: Record<string, string[]> = {
  'POST /credentials': ['{}', '{"description":"d","metadata":"m","acl":["bind:*.example.com"]}', '{"owner_id":null,"acl":null}', '{"owner_id":""}'],
  'PATCH /credentials/{id}': ['{}', '{"description":""}', '{"id":"{{pathId}}","acl":[]}', '{"metadata":null}'],
  'POST /edges/tls': ['{}', '{"hostports":["a.example.com:443"]}', '{"backend":null,"policy":null}', '{"traffic_policy":{"value":""}}'],
  'PATCH /edges/tls/{id}': ['{}', '{"id":"{{pathId}}","description":"x"}', `{"traffic_policy":{"enabled":false,"value":${JSON.stringify(DENY_POLICY)}}}`],
  'PUT /edges/tls/{id}/traffic_policy': [
    '{"value":""}',
    `{"enabled":true,"value":${JSON.stringify(DENY_POLICY)}}`,
    '{"id":"{{pathId}}","module":{"value":""}}',
    '{"module":{"enabled":null,"value":"on_tcp_connect: []"}}',
  ],
};
const UNKNOWN_FIELD_BODIES: Record<string, string[]> = {
  'POST /credentials': ['{"zz":1}', '{"__proto__":{}}', '{"constructor":null}', '{"id":"x"}', '{"token":"x","description":"d"}'],
  'PATCH /credentials/{id}': ['{"owner_id":"x"}', '{"__proto__":null}', '{"toString":1}', '{"Description":"x"}'],
  'POST /edges/tls': ['{"id":"x"}', '{"zz":null}', '{"traffic_policy":{"value":"","module":{}}}', '{"__proto__":{"description":"x"}}'],
  'PATCH /edges/tls/{id}': ['{"hostport":[]}', '{"traffic_policy":{"value":"","zz":1}}', '{"prototype":1}'],
  'PUT /edges/tls/{id}/traffic_policy': ['{"value":"","zz":1}', '{"module":{"value":"","extra":true}}', '{"module":{"value":""},"value":""}', '{"__proto__":1,"value":""}'],
};
const WRONG_TYPE_BODIES: Record<string, string[]> = {
  'POST /credentials': ['{"description":5}', '{"acl":"*"}', '{"acl":[1]}', '{"owner_id":[]}', '{"metadata":{}}', '{"description":"\\ud800"}', '{"metadata":"a\\u0000b"}'],
  'PATCH /credentials/{id}': ['{"id":5}', '{"id":"cr_000000000000000000000000000"}', '{"acl":{"0":"*"}}', '{"description":true}'],
  'POST /edges/tls': ['{"hostports":"a.example.com:443"}', '{"traffic_policy":"x"}', '{"traffic_policy":{}}', '{"traffic_policy":{"enabled":"yes","value":""}}', '{"backend":{}}', '{"policy":false}'],
  'PATCH /edges/tls/{id}': ['{"id":"edgtls_000000000000000000000000000"}', '{"hostports":[null]}', '{"mutual_tls":"x"}', '{"traffic_policy":{"value":5}}'],
  'PUT /edges/tls/{id}/traffic_policy': ['{"value":5}', '{"enabled":"true","value":""}', '{"id":"edgtls_000000000000000000000000000","value":""}', '{"module":"x"}', '{"module":{"enabled":true}}'],
};
const INVALID_JSON = ['{', '{"a":}', "{'a':1}", '{"a":1,}', '{"a":1}{"b":2}', 'nul', '{"a":NaN}', '{"a":"\\x"}', '{"a":"\n"}', '\ufeff{}', '{"a":01}', '[1,]'];
const NOT_OBJECT = ['[]', '[{}]', '1', '"x"', 'null', 'true', '1e400', '  0  '];
const INVALID_UTF8: number[][] = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]];

function bodyCase(template: string, method: string): fc.Arbitrary<BodyCase> {
  const key = `${method} ${template}`;
  if (!ALLOWED[template]!.includes(method)) {
    // A method the route does not allow: 405 comes first, whatever the body, framed or not.
    if (!['POST', 'PUT', 'PATCH', 'DELETE', 'QUERY'].includes(method)) return fc.constant<BodyCase>({ kind: 'none' });
    return fc.constantFrom<BodyCase>(
      { kind: 'none' },
      { kind: 'valid', contentType: 'application/json', payload: '{"zz":1}' },
      { kind: 'valid', contentType: 'application/json', payload: '{' },
      { kind: 'valid', contentType: 'text/plain', payload: 'hello' },
    );
  }
  if (method === 'GET' || method === 'DELETE') {
    return fc.oneof(
      { weight: 4, arbitrary: fc.constant<BodyCase>({ kind: 'none' }) },
      { weight: 2, arbitrary: fc.constantFrom(...JSON_CONTENT_TYPES).map((type): BodyCase => ({ kind: 'typeOnly', contentType: type })) },
      {
        weight: 2,
        arbitrary: fc
          .tuple(fc.constantFrom(undefined, 'application/json', 'text/plain'), fc.constantFrom('{}', 'x', '{"description":"x"}', ' '))
          .map(([type, payload]): BodyCase => ({ kind: 'bodyOnRead', contentType: type, payload })),
      },
    );
  }
  const json = fc.constantFrom(...JSON_CONTENT_TYPES);
  const withJson = (kind: BodyKind, payloads: string[]) =>
    fc.tuple(json, fc.constantFrom(...payloads)).map(([type, payload]): BodyCase => ({ kind, contentType: type, payload }));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<BodyCase>({ kind: 'none' }) },
    { weight: 1, arbitrary: json.map((type): BodyCase => ({ kind: 'emptyWithType', contentType: type, payload: '' })) },
    { weight: 5, arbitrary: withJson('valid', VALID_BODIES[key]!) },
    { weight: 1, arbitrary: fc.constantFrom('{}', 'x').map((payload): BodyCase => ({ kind: 'noType', payload })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...OTHER_CONTENT_TYPES), fc.constantFrom(...VALID_BODIES[key]!))
        .map(([type, payload]): BodyCase => ({ kind: 'otherType', contentType: type, payload })),
    },
    { weight: 1, arbitrary: withJson('invalidJson', INVALID_JSON) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(json, fc.constantFrom(...INVALID_UTF8))
        .map(([type, bytes]): BodyCase => ({
          kind: 'invalidUtf8',
          contentType: type,
          payload: Buffer.concat([Buffer.from('{"description":"a'), Buffer.from(bytes), Buffer.from('b"}')]),
        })),
    },
    { weight: 1, arbitrary: withJson('notObject', NOT_OBJECT) },
    { weight: 2, arbitrary: withJson('unknownField', UNKNOWN_FIELD_BODIES[key]!) },
    { weight: 2, arbitrary: withJson('wrongType', WRONG_TYPE_BODIES[key]!) },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1, max: 64 })
        .map((extra): BodyCase => ({ kind: 'tooLarge', contentType: 'application/json', payload: `{"description":"${'a'.repeat(1024 * 1024 + extra - 18)}"}` })),
    },
  );
}

function queryCase(template: string): fc.Arbitrary<QueryCase> {
  const list = template === '/credentials' || template === '/edges/tls';
  const unknown = fc.oneof(
    fc.constantFrom('zz=1', '__proto__=1', 'constructor=x', 'Limit=5', 'before-id=x', 'limit%5B%5D=1', 'toString=', '=1', 'BEFORE_ID=x', 'before_id[]=x'),
    junkId
      .map((name) => `${name}=1`)
      .filter((text) => [...new URLSearchParams(text).keys()].some((key) => !['limit', 'before_id', 'beforeId'].includes(key))),
  );
  const common: fc.Arbitrary<QueryCase>[] = [
    fc.constant<QueryCase>({ kind: 'none', text: '' }),
    unknown.map((text): QueryCase => ({ kind: 'unknown', text })),
    fc.constantFrom('zz=1&zz=2', '__proto__=1&__proto__=1', 'x&x').map((text): QueryCase => ({ kind: 'unknownTwice', text })),
  ];
  if (!list) {
    return fc.oneof(
      ...common,
      fc.constantFrom('limit=5', 'before_id=x', 'beforeId=', 'limit=1&limit=1').map((text): QueryCase => ({ kind: 'unknown', text })),
    );
  }
  const kind = template === '/credentials' ? 'cr' : 'edgtls';
  const otherKind = kind === 'cr' ? 'edgtls' : 'cr';
  return fc.oneof(
    ...common,
    fc.constantFrom('1', '5', '42', '99', '100').map((n): QueryCase => ({ kind: 'limitOk', text: `limit=${n}` })),
    fc
      .constantFrom('', '0', '05', '+5', '%2B5', '1.0', '101', '1000', '-1', '1e2', '0x10', '%205', '5%20', 'ten', '%EF%BC%95', '99999999999999999999')
      .map((n): QueryCase => ({ kind: 'limitBad', text: `limit=${n}` })),
    fc.constantFrom('limit=5&limit=5', 'limit=5&limit=6', 'limit=&limit=').map((text): QueryCase => ({ kind: 'limitTwice', text })),
    fc
      .tuple(fc.constantFrom('before_id', 'beforeId'), fc.constantFrom('{{own}}', '{{other}}', `${kind}_zzzzzzzzzzzzzzzzzzzzzzzzzzz`.replace('zzzzzzzzzzzzzzzzzzzzzzzzzzz', '1'.repeat(27))), fc.boolean())
      .map(([name, value, limit]): QueryCase => ({ kind: 'beforeOk', text: `${name}=${value}${limit ? '&limit=1' : ''}` })),
    fc
      .tuple(fc.constantFrom('before_id', 'beforeId'), fc.constantFrom(`${otherKind}_${'1'.repeat(27)}`, 'x', '{{admin}}', `${kind}_short`, `${kind}_${'z'.repeat(27)}`))
      .map(([name, value]): QueryCase => ({ kind: 'beforeWrongKind', text: `${name}=${value}` })),
    fc.constantFrom('before_id={{own}}&beforeId={{own}}', 'beforeId=x&before_id=y').map((text): QueryCase => ({ kind: 'beforeBoth', text })),
    fc.constantFrom('before_id=&beforeId={{own}}', 'beforeId=&before_id={{own}}', 'before_id=', 'beforeId=').map((text): QueryCase => ({ kind: 'beforeEmptyCamel', text })),
  );
}

const caseArbitrary: fc.Arbitrary<Case> = fc
  .tuple(fc.constantFrom(...TEMPLATES), fc.oneof({ weight: 8, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE') }, { weight: 1, arbitrary: fc.constantFrom(...ORACLE_METHODS) }))
  .chain(([template, method]) => {
    const kind = template.startsWith('/credentials') ? 'credential' : 'edge';
    const own = kind === 'credential' ? CREDENTIAL_FIXTURE_LIST : EDGE_FIXTURE_LIST;
    const other = kind === 'credential' ? EDGE_FIXTURE_LIST : CREDENTIAL_FIXTURE_LIST;
    return fc.record({
      template: fc.constant(template),
      method: fc.constant(method),
      id: idSpec(own, other),
      auth: fc.oneof({ weight: 3, arbitrary: fc.constantFrom<AuthSpec>({ kind: 'valid', caller: 'admin', scheme: 'Bearer', spaces: 1 }) }, { weight: 4, arbitrary: authSpec }),
      version: simpleVersion,
      body: bodyCase(template, method),
      query: queryCase(template),
    });
  });

/** The answer SPEC §2 prescribes for a case: the first failing step, or the success status. */
function expected(world: World, c: Case, header: string | undefined, idFixture: ReturnType<typeof resolveId>['fixture'], idText: string): Verdict<number>[] {
  const allowed = ALLOWED[c.template]!;
  if (!allowed.includes(c.method)) return [{ status: 405 }];

  const auth = authVerdict(header, world);
  if (!isOk(auth)) return [auth];
  const caller: CallerName = auth.ok;

  const version = versionVerdict(c.version);
  if (!isOk(version)) return [version];

  const routeKey = `${c.method} ${c.template}`;
  // Step 5: body framing.
  switch (c.body.kind) {
    case 'noType':
      return [{ status: 400, code: 'ERR_NGROK_216' }];
    case 'otherType':
      return [{ status: 415, code: 'ERR_NGROK_210' }];
    case 'invalidJson':
    case 'invalidUtf8':
      return [{ status: 400, code: 'ERR_NGROK_213' }];
    case 'notObject':
      return [{ status: 400, code: 'ERR_NGROK_215' }];
    case 'tooLarge':
      return [{ status: 413 }];
    case 'bodyOnRead':
      return [{ status: 400, code: 'ERR_NGROK_211' }];
    default:
      break;
  }

  // Step 6: query. Only the two list operations take parameters; anywhere else each is unknown.
  const isList = c.method === 'GET' && (c.template === '/credentials' || c.template === '/edges/tls');
  if (!isList && c.query.kind !== 'none') return [{ status: 400, code: 'ERR_NGROK_231' }];
  switch (c.query.kind) {
    case 'unknown':
    case 'unknownTwice':
      return [{ status: 400, code: 'ERR_NGROK_231' }];
    case 'limitTwice':
    case 'beforeBoth':
      return [{ status: 400, code: 'ERR_NGROK_232' }];
    case 'limitBad':
      return [{ status: 400, code: 'ERR_NGROK_244' }];
    case 'beforeWrongKind':
      return [{ status: 400, code: 'ERR_NGROK_227' }];
    default:
      break;
  }

  // Step 7: fields. A body that repeats the path id repeats its text, which the field rules
  // refuse when the decoded id holds NUL (no string field may).
  if (c.body.kind === 'unknownField') return [{ status: 400, code: 'ERR_NGROK_214' }];
  if (c.body.kind === 'valid' && String(c.body.payload).includes('{{pathId}}') && decodePathSegment(idText).includes('\u0000')) {
    return [{ status: 400, code: 'ERR_NGROK_215' }];
  }
  if (c.body.kind === 'wrongType') return [{ status: 400, code: 'ERR_NGROK_215' }];
  if (routeKey === 'PUT /edges/tls/{id}/traffic_policy' && (c.body.kind === 'none' || c.body.kind === 'emptyWithType')) {
    return [{ status: 400, code: 'ERR_NGROK_215' }];
  }

  // The resource.
  if (c.template.includes('{id}')) {
    const kind = c.template.startsWith('/credentials') ? 'credential' : 'edge';
    if (!visible(world, caller, idFixture, kind)) return [{ status: 404 }];
    if (routeKey === 'GET /edges/tls/{id}/traffic_policy' && !world.fixtureHasModule(idFixture as EdgeFixture)) return [{ status: 404 }];
  }
  if (c.method === 'POST') return [{ ok: 201 }];
  if (c.method === 'DELETE') return [{ ok: 204 }];
  return [{ ok: 200 }];
}

function matches(outcome: Outcome, verdict: Verdict<number>): boolean {
  if (isOk(verdict)) return outcome.status === verdict.ok;
  return outcome.status === verdict.status && outcome.errorCode === verdict.code;
}

describe('the request pipeline (SPEC §2) as an oracle', () => {
  it('answers every combination of faults with the first one in SPEC order', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async (c) => {
        await world.ensureFixtures();
        const { text: idText, fixture } = c.template.includes('{id}') ? resolveId(c.id, world) : { text: '', fixture: undefined };
        const path = c.template.replace('{id}', idText);
        const own = c.template.startsWith('/credentials') ? world.fixtures.credAdmin.id : world.fixtures.edgeModule.id;
        const other = c.template.startsWith('/credentials') ? world.fixtures.credOther.id : world.fixtures.edgeOther.id;
        const query = world.expand(c.query.text.replaceAll('{{own}}', own).replaceAll('{{other}}', other));
        const header = authHeader(c.auth, world);
        const headers: Req['headers'] = { ...versionHeaders(c.version) };
        if (header !== undefined) headers.authorization = header;
        if (c.body.contentType !== undefined) headers['content-type'] = c.body.contentType;
        const payload = typeof c.body.payload === 'string' ? world.expand(c.body.payload, idText) : c.body.payload;
        const req: Req = { method: c.method, url: query ? `${path}?${query}` : path, headers, payload };

        const want = expected(world, c, header, fixture, idText);
        const outcome = await world.send(req);
        assert.ok(
          want.some((verdict) => matches(outcome, verdict)),
          `expected ${want.map(describeVerdict).join(' or ')}, got ${outcome.status} ${outcome.errorCode ?? ''}: ${outcome.res.body.slice(0, 300)}`,
        );
        if (outcome.status === 405) {
          assert.equal(outcome.res.headers.allow, ALLOWED[c.template]!.join(', '));
        }
      }),
      params(300, 0x5eed01),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Each step alone, with random input

/** The smallest body each body endpoint accepts. */
const MINIMAL_BODY: Record<string, string> = {
  'POST /credentials': '{}',
  'PATCH /credentials/{id}': '{}',
  'POST /edges/tls': '{}',
  'PATCH /edges/tls/{id}': '{}',
  'PUT /edges/tls/{id}/traffic_policy': '{"value":""}',
};

function successStatus(method: string): number {
  return method === 'POST' ? 201 : method === 'DELETE' ? 204 : 200;
}

function assertVerdict(outcome: Outcome, verdicts: Verdict<number>[], context: string): void {
  const ok = verdicts.some((verdict) =>
    isOk(verdict) ? outcome.status === verdict.ok : outcome.status === verdict.status && outcome.errorCode === verdict.code,
  );
  assert.ok(ok, `expected ${verdicts.map(describeVerdict).join(' or ')}, got ${outcome.status} ${outcome.errorCode ?? ''} (${context}): ${outcome.res.body.slice(0, 300)}`);
}

/** The resource answer for a caller who got through every request step with a valid request. */
function resourceVerdict(endpoint: Endpoint, caller: CallerName, fixture: Fixture | undefined): Verdict<number> {
  if (endpoint.idKind && !visible(world, caller, fixture, endpoint.idKind)) return { status: 404 };
  if (endpoint.method === 'GET' && endpoint.template.endsWith('traffic_policy') && !world.fixtureHasModule(fixture as 'edgeModule')) {
    return { status: 404 };
  }
  return { ok: successStatus(endpoint.method) };
}

const endpointWithFixture = fc.constantFrom(...ENDPOINTS).chain((endpoint) =>
  fc.tuple(
    fc.constant(endpoint),
    fc.constantFrom<Fixture>(...(endpoint.idKind === 'edge' ? EDGE_FIXTURE_LIST : CREDENTIAL_FIXTURE_LIST)),
  ),
);

// ---------------------------------------------------------------------------------------------

const HOP_BY_HOP = new Set(['content-length', 'transfer-encoding', 'connection', 'expect', 'upgrade', 'host', 'te', 'trailer', 'keep-alive']);
const headerName = fc.oneof(
  fc.constantFrom('accept', 'accept-encoding', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded', 'user-agent', 'cookie', 'x-request-id', 'ngrok-operation-id', 'x-http-method-override', 'origin', 'if-none-match', 'range', 'prefer'),
  fc.string({ unit: fc.constantFrom(...`${BASE62}!#$%&'*+-.^_\`|~`.split('')), minLength: 1, maxLength: 20 }),
).filter((name) => !HOP_BY_HOP.has(name.toLowerCase()) && !['authorization', 'content-type', 'service-version', 'ngrok-version'].includes(name.toLowerCase()));

/** Host values that are a valid `host[:port]` (a malformed one is in regressions.test.ts). */
const hostValue = fc.oneof(
  fc.constantFrom('localhost', 'localhost:80', 'api.example.com', 'API.Example.COM:8443', '127.0.0.1:8080', '[::1]:80', 'xn--bcher-kva.example'),
  fc
    .tuple(fc.string({ unit: fc.constantFrom(...'abcxyz019-'.split('')), minLength: 1, maxLength: 20 }), fc.option(fc.integer({ min: 1, max: 65535 })))
    .filter(([name]) => !name.startsWith('-') && !name.endsWith('-'))
    .map(([name, port]) => `${name}.example${port === null ? '' : `:${port}`}`),
);

describe('headers', () => {
  it('Authorization, version and Content-Type: the first failing step answers, with its exact code', async () => {
    const arbitrary = fc.record({
      target: endpointWithFixture,
      auth: authSpec,
      version: versionSpec,
      contentType: fc.oneof({ weight: 3, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: contentType }),
      extra: fc.array(fc.tuple(headerName, fc.oneof(headerText(60), fc.constantFrom<string[]>(['a', 'b'])).filter((v) => [v].flat().every((x) => x.trim() === x))), { maxLength: 4 }),
      host: fc.option(hostValue),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ target: [endpoint, fixture], auth, version, contentType: type, extra, host }) => {
        await world.ensureFixtures();
        const path = endpoint.template.replace('{id}', world.fixtures[fixture].id);
        const headers: Req['headers'] = {};
        for (const [name, value] of extra) headers[name] = value;
        if (host !== null) headers.host = host;
        Object.assign(headers, versionHeaders(version));
        const authorization = authHeader(auth, world);
        if (authorization !== undefined) headers.authorization = authorization;
        const key = `${endpoint.method} ${endpoint.template}`;
        const payload = MINIMAL_BODY[key];
        if (payload !== undefined) headers['content-type'] = type;
        else if (type === 'application/json') headers['content-type'] = type; // a type without a body is fine on reads

        const outcome = await world.send({ method: endpoint.method, url: path, headers, payload });

        const verdict = authVerdict(authorization, world);
        const context = `${key} auth=${JSON.stringify(authorization)} version=${JSON.stringify(versionHeaders(version))} type=${JSON.stringify(type)}`;
        if (!isOk(verdict)) return assertVerdict(outcome, [verdict], context);
        const versionOk = versionVerdict(version);
        if (!isOk(versionOk)) return assertVerdict(outcome, [versionOk], context);
        const want: Verdict<number>[] = [];
        if (payload !== undefined) {
          const mediaType = type.split(';')[0]!.trim().toLowerCase();
          if (mediaType !== 'application/json') {
            want.push({ status: 415, code: 'ERR_NGROK_210' });
            if (mediaType === '') want.push({ status: 400, code: 'ERR_NGROK_216' });
            return assertVerdict(outcome, want, context);
          }
          // application/json with malformed parameters may be refused as a media type.
          if (type.includes(';')) want.push({ status: 415, code: 'ERR_NGROK_210' });
        }
        want.push(resourceVerdict(endpoint, verdict.ok, fixture));
        assertVerdict(outcome, want, context);
        // A secret is never echoed in full: at most a prefix of 8 characters (SPEC §2).
        if (outcome.status === 401 && authorization) {
          const presented = authorization.replace(/^\S+ +/, '');
          if (presented.length > 8) assert.ok(!outcome.res.body.includes(presented), `the presented value is echoed: ${outcome.res.body}`);
        }
      }),
      params(300, 0x4ead01),
    );
  });
});

// ---------------------------------------------------------------------------------------------

/** How a query component may be written: as is, percent-encoded where needed, or every byte. */
function encodeAs(text: string, how: 'raw' | 'component' | 'all' | 'plus'): string {
  switch (how) {
    case 'raw':
      return /^[A-Za-z0-9_.~\-*!'()$,:@/]*$/.test(text) ? text : encodeURIComponent(text);
    case 'component':
      return encodeURIComponent(text);
    case 'all':
      return [...Buffer.from(text)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
    case 'plus':
      return encodeURIComponent(text).replace(/%20/g, '+');
  }
}

const KSUID_MAX = 'aWgEPTl1tmebfsQzFP4bxwgy80V';
function isIdOfKind(value: string, prefix: string): boolean {
  if (!value.startsWith(`${prefix}_`)) return false;
  const ksuid = value.slice(prefix.length + 1);
  return /^[0-9A-Za-z]{27}$/.test(ksuid) && ksuid <= KSUID_MAX;
}

type Param = [name: string, value: string, how: 'raw' | 'component' | 'all' | 'plus'];

const paramName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('limit', 'before_id', 'beforeId') },
  { weight: 2, arbitrary: fc.constantFrom('Limit', 'LIMIT', 'before-id', 'beforeid', 'before_ID', 'limit[]', '__proto__', 'constructor', 'hasOwnProperty', '', ' limit', 'limit ', 'page', 'offset', 'cursor') },
  { weight: 1, arbitrary: nastyString(10).map((s) => s.replace(/[\ud800-\udfff]/g, '')) },
);

const paramValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('1', '2', '50', '99', '100', '101', '0', '', '05', '+5', '1.0', '-1', '1e2', '0x10', ' 5', '5 ', '５', '٣', '99999999999999999999', 'NaN', 'null') },
  { weight: 3, arbitrary: fc.constantFrom('{{credAdmin}}', '{{credMember}}', '{{credOther}}', '{{edgeModule}}', '{{edgeBare}}', '{{edgeOther}}', '{{admin}}') },
  { weight: 2, arbitrary: junkId.map((id) => decodePathSegment(id)) },
  { weight: 1, arbitrary: nastyString(16).map((s) => s.replace(/[\ud800-\udfff]/g, '')) },
);


const queryArbitrary = fc.record({
  endpoint: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ENDPOINTS.filter((e) => e.list)) }, { weight: 1, arbitrary: fc.constantFrom(...ENDPOINTS.filter((e) => e.method === 'GET')) }),
  params: fc.array(fc.tuple(paramName, paramValue, fc.constantFrom<Param[2]>('raw', 'raw', 'component', 'all', 'plus')), { maxLength: 4 }),
  separator: fc.constantFrom('&', '&', '&', '&&', ';'),
  lead: fc.constantFrom('', '', '&'),
});

describe('query strings', () => {
  it('unknown 231, repeated 232, bad limit 244, bad before_id 227; otherwise a page that respects them', async () => {
    await fc.assert(
      fc.asyncProperty(queryArbitrary, async ({ endpoint, params: list, separator, lead }) => {
        await world.ensureFixtures();
        const path = endpoint.template.replace('{id}', world.fixtures[endpoint.idKind === 'credential' ? 'credAdmin' : 'edgeModule'].id);
        const expanded = list.map(([name, value, how]): Param => [name, world.expand(value), how]);
        const query = lead + expanded.map(([name, value, how]) => `${encodeAs(name, how)}=${encodeAs(value, how)}`).join(separator);
        const url = query === '' ? path : `${path}?${query}`;
        const outcome = await world.send({ method: 'GET', url, headers: { authorization: world.auth('admin'), 'service-version': '2' } });

        // The parameters as the server reads them (standard form decoding).
        const parsed = new URLSearchParams(serverUrl(url).search);
        const keys = [...parsed.keys()];
        const known = endpoint.list ? ['limit', 'before_id', 'beforeId'] : [];
        const context = `GET ${url}`;
        if (keys.some((key) => !known.includes(key))) return assertVerdict(outcome, [{ status: 400, code: 'ERR_NGROK_231' }], context);
        if (new Set(keys).size !== keys.length) return assertVerdict(outcome, [{ status: 400, code: 'ERR_NGROK_232' }], context);
        if (!endpoint.list) return assertVerdict(outcome, [resourceVerdict(endpoint, 'admin', endpoint.idKind === 'credential' ? 'credAdmin' : 'edgeModule')], context);

        const snake = parsed.get('before_id') || undefined;
        const camel = parsed.get('beforeId') || undefined;
        if (snake !== undefined && camel !== undefined) return assertVerdict(outcome, [{ status: 400, code: 'ERR_NGROK_232' }], context);
        const limit = parsed.get('limit');
        const beforeId = snake ?? camel;
        const bad: Verdict<number>[] = [];
        if (limit !== null && !(/^[1-9][0-9]*$/.test(limit) && Number(limit) <= 100)) bad.push({ status: 400, code: 'ERR_NGROK_244' });
        const kind = endpoint.template === '/credentials' ? 'cr' : 'edgtls';
        if (beforeId !== undefined && !isIdOfKind(beforeId, kind)) bad.push({ status: 400, code: 'ERR_NGROK_227' });
        if (bad.length > 0) return assertVerdict(outcome, bad, context);

        assertVerdict(outcome, [{ ok: 200 }], context);
        const items = outcome.body![endpoint.template === '/credentials' ? 'credentials' : 'tls_edges'] as { id: string }[];
        assert.ok(items.length <= (limit === null ? 100 : Number(limit)), `more items than the limit: ${context}`);
        if (beforeId !== undefined) for (const item of items) assert.ok(item.id < beforeId, `an item not before before_id: ${context}`);
        // The next page, when there is one, continues strictly after this page.
        const next = outcome.body!.next_page_uri;
        if (typeof next === 'string') {
          const nextUrl = new URL(next);
          const page = await world.send({ method: 'GET', url: nextUrl.pathname + nextUrl.search, headers: { authorization: world.auth('admin'), 'service-version': '2' } });
          assert.equal(page.status, 200, page.res.body);
          const more = page.body![endpoint.template === '/credentials' ? 'credentials' : 'tls_edges'] as { id: string }[];
          for (const item of more) assert.ok(item.id < items.at(-1)!.id, `next page overlaps: ${next}`);
        }
      }),
      params(250, 0x9e7901),
    );
  });
});

// ---------------------------------------------------------------------------------------------

const TEMPLATE_SEGMENTS = Object.keys(ALLOWED).map((template) => template.split('/').slice(1));

/** SPEC §2 step 1, segment by segment on the path the router sees (paths match exactly). */
function routeOf(pathname: string): string | undefined {
  const segments = pathname.split('/').slice(1);
  for (const [index, template] of TEMPLATE_SEGMENTS.entries()) {
    if (template.length !== segments.length) continue;
    if (template.every((part, i) => (part === '{id}' ? segments[i] !== '' : part === segments[i]))) return Object.keys(ALLOWED)[index];
  }
  return undefined;
}


/** A real id written with some of its characters percent-encoded: the same id to the router. */
const encodedFixture = fc.tuple(fc.constantFrom<Fixture>(...CREDENTIAL_FIXTURE_LIST, ...EDGE_FIXTURE_LIST), fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }));

const pathSegment = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('credentials', 'edges', 'tls', 'traffic_policy', 'healthz', 'readyz', 'openapi.json') },
  { weight: 2, arbitrary: fc.constantFrom('Credentials', 'CREDENTIALS', 'credential', 'edges%2Ftls', 'tls%2F', '', '.', '..', '%2E%2E', 'v2', 'api', 'credentials;x', 'credentials.json') },
  { weight: 2, arbitrary: junkId },
  { weight: 1, arbitrary: fc.constantFrom('{{credAdmin}}', '{{edgeModule}}', '{{edgeOther}}') },
);

const pathArbitrary = fc.oneof(
  // templates with every kind of id
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.constantFrom(...Object.keys(ALLOWED).filter((t) => t.includes('{id}'))), fc.oneof(junkId, fc.constantFrom('{{credAdmin}}', '{{credOther}}', '{{edgeModule}}', '{{edgeBare}}', '{{edgeOther}}', '{{credMember}}')))
      .map(([template, id]) => ({ path: template.replace('{id}', id), encode: null as null | [Fixture, boolean[]] })),
  },
  // a real id, partly percent-encoded
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('/credentials/{id}', '/edges/tls/{id}', '/edges/tls/{id}/traffic_policy'), encodedFixture).map(([path, encode]) => ({ path, encode })) },
  // random segments, with trailing and doubled slashes
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.array(pathSegment, { minLength: 1, maxLength: 5 }), fc.constantFrom('', '', '/', '//'))
      .map(([segments, tail]) => ({ path: `/${segments.join('/')}${tail}`, encode: null as null | [Fixture, boolean[]] })),
  },
);

describe('paths and methods', () => {
  it('unknown paths are 404, other methods 405 with Allow, ids not of the caller 404', async () => {
    const arbitrary = fc.record({
      target: pathArbitrary,
      method: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('GET', 'DELETE', 'PATCH', 'PUT', 'POST') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      caller: fc.constantFrom<CallerName | null>('admin', 'member', 'stranger', null),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ target, method, caller }) => {
        await world.ensureFixtures();
        let path = world.expand(target.path);
        let encodedId: string | undefined;
        if (target.encode) {
          const [fixture, flags] = target.encode;
          const id = world.fixtures[fixture].id;
          encodedId = id;
          const written = [...id].map((char, i) => (flags[i] ? `%${char.charCodeAt(0).toString(16).toUpperCase()}` : char)).join('');
          path = path.replace('{id}', written);
        }
        const headers: Req['headers'] = { 'service-version': '2' };
        if (caller) headers.authorization = world.auth(caller);
        const outcome = await world.send({ method, url: path, headers });

        const pathname = decodeUnreserved(serverUrl(path).pathname);
        const template = routeOf(pathname);
        const context = `${method} ${path} (seen as ${pathname})`;
        if (template === undefined) {
          if (pathname === '/metrics') return; // an operational endpoint outside the route table here
          return assertVerdict(outcome, [{ status: 404 }], context);
        }
        const allowed = ALLOWED[template]!;
        if (!allowed.includes(method)) {
          assertVerdict(outcome, [{ status: 405 }], context);
          if (method !== 'HEAD') assert.equal(outcome.res.headers.allow, allowed.join(', '), context);
          return;
        }
        if (!template.startsWith('/credentials') && !template.startsWith('/edges')) return assertVerdict(outcome, [{ ok: 200 }], context);
        if (!caller) return assertVerdict(outcome, [{ status: 401, code: 'ERR_NGROK_200' }], context);
        if (method === 'PUT') return assertVerdict(outcome, [{ status: 400, code: 'ERR_NGROK_215' }], context); // no body: value is required

        const endpoint = ENDPOINTS.find((e) => e.template === template && e.method === method)!;
        let fixture: Fixture | undefined;
        if (endpoint.idKind) {
          const segment = pathname.split('/')[endpoint.idKind === 'credential' ? 2 : 3]!;
          const id = decodePathSegment(segment);
          fixture = (Object.keys(world.fixtures) as Fixture[]).find((name) => world.fixtures[name].id === id);
          if (encodedId !== undefined) assert.equal(id, encodedId, 'the encoded id decodes to the real one');
        }
        assertVerdict(outcome, [resourceVerdict(endpoint, caller, fixture)], context);
      }),
      params(300, 0x9a7401),
    );
  });
});


// ---------------------------------------------------------------------------------------------

/** Node's rule for repeated request headers: these keep their first value, others are joined. */
const FIRST_WINS = new Set(['authorization', 'content-type', 'host', 'content-length', 'user-agent']); // a second host: 400

function writeName(name: string, style: 'lower' | 'upper' | 'title' | 'mixed', salt: number): string {
  switch (style) {
    case 'lower':
      return name;
    case 'upper':
      return name.toUpperCase();
    case 'title':
      return name.replace(/(^|-)([a-z])/g, (_, dash: string, char: string) => dash + char.toUpperCase());
    case 'mixed':
      return [...name].map((char, i) => ((i + salt) % 2 ? char.toUpperCase() : char)).join('');
  }
}

const wireArbitrary = fc.record({
  target: endpointWithFixture,
  auth: fc.constantFrom('one', 'twice', 'valid-then-bad', 'bad-then-valid'),
  version: fc.constantFrom('service', 'ngrok', 'both', 'service-twice', 'two-and-three', 'ngrok-twice'),
  type: fc.constantFrom('one', 'twice', 'json-then-text', 'text-then-json'),
  nameStyle: fc.constantFrom<'lower' | 'upper' | 'title' | 'mixed'>('lower', 'upper', 'title', 'mixed'),
  salt: fc.nat(3),
  ows: fc.constantFrom('', ' ', '\t', ' \t '),
  chunked: fc.boolean(),
  cuts: fc.array(fc.nat(40), { maxLength: 3 }),
  host: fc.constantFrom('once', 'twice'),
  extra: fc.array(fc.tuple(headerName, headerText(40).filter((v) => v.trim() === v && !v.includes('\t'))), { maxLength: 3 }),
});

describe('the wire (raw HTTP/1.1)', () => {
  it('repeated headers, header-name case, whitespace and chunked bodies: answered as a real parser merges them', async () => {
    await fc.assert(
      fc.asyncProperty(wireArbitrary, async (c) => {
        await world.ensureFixtures();
        const [endpoint, fixture] = c.target;
        const path = endpoint.template.replace('{id}', world.fixtures[fixture].id);
        const key = `${endpoint.method} ${endpoint.template}`;
        const payload = MINIMAL_BODY[key];
        const valid = world.auth('admin');
        const bad = 'Bearer nope';
        const lines: [string, string][] = [['host', 'api.example.com']];
        if (c.host === 'twice') lines.push(['host', 'other.example.com']);
        const auths = { one: [valid], twice: [valid, valid], 'valid-then-bad': [valid, bad], 'bad-then-valid': [bad, valid] }[c.auth];
        for (const value of auths) lines.push(['authorization', value]);
        const versions: Record<string, [string, string][]> = {
          service: [['service-version', '2']],
          ngrok: [['ngrok-version', '2']],
          both: [['service-version', '2'], ['ngrok-version', '2']],
          'service-twice': [['service-version', '2'], ['service-version', '2']],
          'two-and-three': [['service-version', '2'], ['ngrok-version', '3']],
          'ngrok-twice': [['ngrok-version', '2'], ['ngrok-version', '2']],
        };
        lines.push(...versions[c.version]!);
        if (payload !== undefined) {
          const types = { one: ['application/json'], twice: ['application/json', 'application/json'], 'json-then-text': ['application/json', 'text/plain'], 'text-then-json': ['text/plain', 'application/json'] }[c.type];
          for (const value of types) lines.push(['content-type', value]);
        }
        lines.push(...c.extra);
        let body = '';
        if (payload !== undefined) {
          if (c.chunked) {
            lines.push(['transfer-encoding', 'chunked']);
            const cuts = [...new Set(c.cuts.map((cut) => cut % (payload.length + 1)))].sort((a, b) => a - b);
            let at = 0;
            for (const cut of [...cuts, payload.length]) {
              if (cut > at) body += `${(cut - at).toString(16)}\r\n${payload.slice(at, cut)}\r\n`;
              at = cut;
            }
            body += '0\r\n\r\n';
          } else {
            lines.push(['content-length', String(Buffer.byteLength(payload))]);
            body = payload;
          }
        }
        lines.push(['connection', 'close']);
        // Whitespace around framing headers is Node's to refuse (regressions.test.ts: client errors).
        const framing = new Set(['content-length', 'transfer-encoding']);
        const head = lines.map(([name, value]) => `${writeName(name, c.nameStyle, c.salt)}:${framing.has(name) ? ' ' : c.ows}${value}${framing.has(name) ? '' : c.ows}`).join('\r\n');
        const bytes = Buffer.from(`${endpoint.method} ${path} HTTP/1.1\r\n${head}\r\n\r\n${body}`, 'utf8');
        const outcome = await world.sendRaw(bytes, { method: endpoint.method, url: path });
        assert.ok(outcome, 'an answer');

        // The headers as Node hands them to the application.
        const merged = new Map<string, string>();
        for (const [name, value] of lines) {
          const previous = merged.get(name);
          if (previous === undefined) merged.set(name, value);
          else if (!FIRST_WINS.has(name)) merged.set(name, `${previous}, ${value}`);
        }
        const context = `${key} ${JSON.stringify(head)}`;
        // RFC 9112 §3.2: two Host fields are refused before anything else is looked at.
        if (c.host === 'twice') return assertVerdict(outcome, [{ status: 400, code: undefined }], context);
        const auth = authVerdict(merged.get('authorization'), world);
        if (!isOk(auth)) return assertVerdict(outcome, [auth], context);
        const version = versionVerdict({ service: merged.get('service-version'), ngrok: merged.get('ngrok-version'), serviceName: '', ngrokName: '' });
        if (!isOk(version)) return assertVerdict(outcome, [version], context);
        if (payload !== undefined && merged.get('content-type') !== 'application/json') {
          return assertVerdict(outcome, [{ status: 415, code: 'ERR_NGROK_210' }], context);
        }
        assertVerdict(outcome, [resourceVerdict(endpoint, auth.ok, fixture)], context);
        if (outcome.body && typeof outcome.body.uri === 'string') assert.ok(outcome.body.uri.startsWith('http://api.example.com/'), `uri from the first Host: ${context}`);
      }),
      params(80, 0x3a7e01),
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe('pathological lengths', () => {
  it('long runs of grammar characters in every position stay cheap and well answered', async () => {
    const pattern = fc.constantFrom('a', ' ', 'a ', '.', 'a.', '-', '*.', '0', ':', '=', '%', '%2', '\\', '"', '${', '(', '[', '{"a":', 'é', '😀', 'bind:', 'a-', '0.', '1:');
    const arbitrary = fc.record({
      position: fc.constantFrom('authorization', 'version', 'content-type', 'limit', 'before_id', 'query name', 'path id', 'description', 'acl', 'hostports', 'owner_id', 'patch id', 'policy', 'json key'),
      pattern,
      count: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1000, max: 20_000 })),
      tail: fc.constantFrom('', '!', 'x', ' ', '\n'),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ position, pattern: unit, count, tail }) => {
        await world.ensureFixtures();
        const long = unit.repeat(count) + tail;
        const headerSafe = long.replace(/[^\t\x20-\x7e]/g, 'a');
        const headers: Req['headers'] = { authorization: world.auth('admin'), 'service-version': '2' };
        let method = 'GET';
        let url = '/credentials';
        let payload: string | undefined;
        const json = (value: unknown) => {
          method = 'POST';
          headers['content-type'] = 'application/json';
          payload = JSON.stringify(value);
        };
        switch (position) {
          case 'authorization':
            headers.authorization = `Bearer ${headerSafe}`;
            break;
          case 'version':
            headers['service-version'] = headerSafe;
            break;
          case 'content-type':
            json({});
            headers['content-type'] = headerSafe;
            break;
          case 'limit':
          case 'before_id':
            url = `/credentials?${position}=${encodeURIComponent(long)}`;
            break;
          case 'query name':
            url = `/edges/tls?${encodeURIComponent(long)}=1`;
            break;
          case 'path id':
            url = `/edges/tls/${encodeURIComponent(long).slice(0, 500).replace(/%[0-9A-F]?$/, '')}/traffic_policy`;
            break;
          case 'description':
          case 'acl':
          case 'owner_id':
            json({ [position]: position === 'acl' ? [long] : long });
            break;
          case 'hostports':
            url = '/edges/tls';
            json({ hostports: [long] });
            break;
          case 'patch id':
            url = `/credentials/${world.fixtures.credAdmin.id}`;
            json({ id: long });
            method = 'PATCH';
            break;
          case 'policy':
            url = `/edges/tls/${world.fixtures.edgeBare.id}/traffic_policy`;
            json({ value: long });
            method = 'PUT';
            break;
          case 'json key':
            json({ [long]: 1 });
            break;
        }
        const outcome = await world.send({ method, url, headers, payload });
        if (outcome.status >= 400) {
          // Messages quote what was sent, but never the whole of a long value.
          assert.ok(outcome.res.body.length < 4096, `a ${outcome.res.body.length}-byte error for ${position}`);
        }
      }),
      params(120, 0x10e901),
    );
  });
});
