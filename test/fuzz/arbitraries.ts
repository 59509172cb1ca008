/**
 * Generators of hostile input for the abuse suite. Everything that depends on the running world
 * (ids, keys, tokens) is generated symbolically, as `{{name}}` placeholders or small descriptors
 * that World resolves when the case runs, so that a shrunk counterexample replays against the
 * fixtures of the moment.
 */
import fc from 'fast-check';
import type { CallerName, CredentialFixture, EdgeFixture, Fixture } from './world.js';

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const base62Char = fc.constantFrom(...BASE62.split(''));
export const base62 = (length: number) => fc.string({ unit: base62Char, minLength: length, maxLength: length });

// ---------------------------------------------------------------------------------------------
// Strings

/** Characters that break naive code: NUL, lone surrogates, BOM, bidi overrides, quotes, escapes. */
export const NASTY_CHARS = [
  '\u0000',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ufeff',
  '\ufffe',
  '\uffff',
  '\u202e',
  '\u200b',
  '\u2028',
  '\u2029',
  '\u0085',
  '\u001b',
  '\u007f',
  'é',
  'e\u0301',
  'ß',
  'İ',
  '😀',
  '👩‍👩‍👧',
  '\n',
  '\r',
  '\t',
  ' ',
  '"',
  "'",
  '\\',
  '/',
  '%',
  '$',
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
  '#',
  '&',
  '*',
  '!',
  '|',
  '>',
  '<',
  '`',
  '=',
  '_',
  '-',
  '.',
  '?',
  '~',
  '@',
];

// Any code point, lone surrogates included (fc's 'binary' unit costs ~0.8 s to build at load).
const anyCodePoint = fc.integer({ min: 0, max: 0x10ffff }).map((codePoint) => String.fromCodePoint(codePoint));
export const nastyUnit = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_CHARS) },
  { weight: 4, arbitrary: base62Char },
  { weight: 2, arbitrary: anyCodePoint },
);

export const nastyString = (maxLength = 24) => fc.string({ unit: nastyUnit, maxLength });

/** Strings around the byte limits of SPEC §5.1 and far beyond them. */
export const sizedString = fc.oneof(
  fc.constantFrom(255, 256, 4096, 4097, 254, 1, 0, 20_000).chain((n) =>
    fc.constantFrom('a', 'é', '😀', '\u0000', '\ud800').map((c) => c.repeat(Math.ceil(n / Buffer.byteLength(c)))),
  ),
  fc.tuple(nastyString(6), fc.integer({ min: 1, max: 3000 })).map(([s, n]) => s.repeat(n)),
);

export const adversarialString = fc.oneof({ weight: 5, arbitrary: nastyString() }, { weight: 1, arbitrary: sizedString });

// ---------------------------------------------------------------------------------------------
// JSON text, written by hand: duplicate keys, odd numbers, escapes JSON.stringify never makes

const ws = fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  ');

export const numberToken = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.constantFrom(
    '1e400',
    '-1e400',
    '1e-400',
    '-0',
    '0.0',
    '1E+2',
    '123456789012345678901234567890',
    '9007199254740993',
    '0.1e1',
    '5e-324',
    '1.7976931348623157e309',
  ),
);

export const stringToken = fc.oneof(
  { weight: 6, arbitrary: adversarialString.map((s) => JSON.stringify(s)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '"\\u0000"',
      '"\\ud800"',
      '"\\udfff\\ud800"',
      '"\\uD83D\\uDE00"',
      '"a\\u0000b"',
      '"\\""',
      '"\\/"',
      '"\\b\\f\\n\\r\\t"',
      '"{{admin}}"',
      '"{{member}}"',
      '"{{stranger}}"',
      '"{{credAdmin}}"',
      '"{{credOther}}"',
      '"{{edgeModule}}"',
      '"{{edgeOther}}"',
      '"{{pathId}}"',
      '""',
      '"null"',
      '"*"',
    ),
  },
);

export const ADVERSARIAL_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  'then',
  '',
  ' ',
  'Description',
  'DESCRIPTION',
  'description ',
  'token',
  'id',
  'owner_id',
  'ownerId',
  'module',
  'enabled',
  'value',
  'acl',
  'hostports',
  'traffic_policy',
  'trafficPolicy',
  'uri',
  'created_at',
  'backend',
  'policy',
  'a.b',
  '$ref',
  '\u0000',
  '\ud800',
];

export const keyToken = (fields: readonly string[]) =>
  fc
    .oneof(
      { weight: 6, arbitrary: fields.length ? fc.constantFrom(...fields) : fc.constant('x') },
      { weight: 2, arbitrary: fc.constantFrom(...ADVERSARIAL_KEYS) },
      { weight: 1, arbitrary: nastyString(12) },
    )
    .map((key) => JSON.stringify(key));

const scalarToken = fc.oneof(
  { weight: 4, arbitrary: stringToken },
  { weight: 2, arbitrary: numberToken },
  { weight: 2, arbitrary: fc.constantFrom('null', 'true', 'false') },
);

/** A JSON value as text; objects may repeat keys, keys lean towards `fields`. */
export function jsonValueText(fields: readonly string[], maxDepth = 4): fc.Arbitrary<string> {
  const { value } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', maxDepth, withCrossShrink: true }, scalarToken, tie('array'), tie('object')),
    array: fc
      .tuple(ws, fc.array(tie('value'), { maxLength: 5 }))
      .map(([space, items]) => `[${space}${items.join(`,${space}`)}${space}]`),
    object: fc
      .tuple(ws, fc.array(fc.tuple(keyToken(fields), tie('value')), { maxLength: 5 }))
      .map(([space, entries]) => `{${space}${entries.map(([k, v]) => `${k}${space}:${space}${v}`).join(`,${space}`)}${space}}`),
  }));
  return value;
}

/** An object (maybe with repeated keys) whose values are drawn from `valueFor(key)`. */
export function objectText(entries: fc.Arbitrary<[string, string]>, maxKeys = 6): fc.Arbitrary<string> {
  return fc
    .tuple(ws, fc.array(entries, { maxLength: maxKeys }))
    .map(([space, list]) => `{${space}${list.map(([k, v]) => `${JSON.stringify(k)}${space}:${space}${v}`).join(`,${space}`)}${space}}`);
}

/** Nesting far deeper than any schema: arrays, objects, or both, inside a known field or at the top. */
export const deepNesting = fc
  .record({
    depth: fc.integer({ min: 50, max: 60_000 }),
    kind: fc.constantFrom('array', 'object', 'mixed'),
    field: fc.constantFrom('description', 'acl', 'hostports', 'traffic_policy', 'module', 'value', 'zz', null),
  })
  .map(({ depth, kind, field }) => {
    let open = '';
    let close = '';
    for (let i = 0; i < depth; i++) {
      const array = kind === 'array' || (kind === 'mixed' && i % 2 === 0);
      open += array ? '[' : '{"a":';
      close = (array ? ']' : '}') + close;
    }
    const inner = `${open}1${close}`;
    return field === null ? inner : `{"${field}":${inner}}`;
  });

// ---------------------------------------------------------------------------------------------
// Domain values: ACL rules, hostports, policies, ids (valid ones, near misses and garbage)

const VALID_RULES = [
  '*',
  'bind:*',
  'bind:app.example.com',
  'bind:*.example.com',
  'bind:1.tcp.example.net:20002',
  'bind:10.0.0.7:8443',
  'bind:env=prod',
  'bind:app=*',
  'bind:*=edge',
];
const INVALID_RULES = [
  'bind:',
  'bind:*.*.example.com',
  'bind:example.com:0',
  'bind:example.com:080',
  'bind:-bad.example.com',
  'connect:example.com',
  'bind: x.com',
  'bind:*=*',
  'bind:256.1.1.1:80',
  'bind:01.2.3.4:80',
  'bind:*.1.2.3.4',
  'BIND:a.example.com',
  'bind:a.example.com:65536',
  `bind:${'a'.repeat(64)}.example.com`,
  `bind:${'a.'.repeat(127)}com`,
];

/** Applies small character edits: the near misses that break grammars. */
export function mutated(seeds: readonly string[], symbols: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.constantFrom(...seeds),
      fc.array(fc.tuple(fc.nat(300), fc.nat(4), fc.oneof(fc.constantFrom(...symbols), nastyUnit)), { maxLength: 4 }),
    )
    .map(([seed, edits]) => {
      let text = seed;
      for (const [at, remove, insert] of edits) {
        const i = at % (text.length + 1);
        text = text.slice(0, i) + insert + text.slice(i + remove);
      }
      return text;
    });
}

const ruleSymbols = ['*', '.', ':', '=', '-', '_', 'bind:', '0', '65535', ' ', '..', '*.'];
export const aclRule = fc.oneof(
  fc.constantFrom(...VALID_RULES),
  fc.constantFrom(...INVALID_RULES),
  mutated([...VALID_RULES, ...INVALID_RULES], ruleSymbols),
);

const VALID_HOSTPORTS = ['a.example.com:443', 'example.net:1', '10.0.0.7:8443', 'x-y.example.org:65535'];
export const hostport = fc.oneof(
  fc.constantFrom(...VALID_HOSTPORTS),
  fc.constantFrom('example.com', ':443', 'a.example.com:0', 'a.example.com:080', '256.0.0.1:80', '*.example.com:443', '[::1]:443', 'localhost:80'),
  mutated(VALID_HOSTPORTS, ruleSymbols),
);

/** Valid policies in YAML and JSON (SPEC §7.3), the seeds of every mutated document. */
export const VALID_POLICIES = [
  '',
  'on_tcp_connect: []\n',
  'on_tcp_connect:\n  - actions:\n      - type: deny\n',
  `on_tcp_connect:
  - name: Block some countries
    expressions:
      - "conn.geo.country_code in ['XX', 'YY']"
    actions:
      - type: log
        config:
          metadata:
            country: "\${conn.geo.country_code}"
      - type: deny
`,
  `inbound:
  - name: only the office
    expressions: ["inCidrRange(conn.client_ip, '10.0.0.0/8') && conn.server_port == 443"]
    actions:
      - type: restrict-ips
        config: {allow: ["10.0.0.0/8", "2001:db8::/32"], deny: ["10.1.0.0/16"], enforce: false}
`,
  JSON.stringify({
    on_tcp_connect: [
      {
        name: 'Block some countries',
        expressions: ["conn.geo.country_code in ['XX', 'YY']"],
        actions: [{ type: 'log', config: { metadata: { country: '${conn.geo.country_code}' } } }, { type: 'deny' }],
      },
    ],
  }),
  JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { deny: ['${conn.client_ip}/32'] } }] }] }),
  '# a comment\r\non_tcp_connect:\r\n  - actions: [ {type: deny} ]\r\n',
];

const policySymbols = [
  '[',
  ']',
  '{',
  '}',
  ':',
  ',',
  '-',
  '"',
  "'",
  '\n',
  ' ',
  '  ',
  '#',
  '&a',
  '*a',
  '!!binary',
  '!',
  '|',
  '>',
  '${',
  '}',
  '::',
  '/33',
  'null',
  '~',
  '---\n',
  '...\n',
  'type: deny',
  'type: log',
  'type: custom-response',
  'type: nope',
  'on_http_request',
  'outbound',
  'inbound',
  'on_tcp_connect',
  'expressions',
  'actions',
  'config',
  'metadata',
  'allow',
  'deny',
  'enforce',
  'ip_policies',
  'req.url',
  'conn.client_ip',
  'inCidrRange(',
  ')',
  '&&',
  '== 1',
  "'x'",
  '<<: *a',
  '%YAML 1.1\n',
  '\t',
  '\u0000',
  '\ud800',
];

/** A policy document: valid seeds, their mutations, repetitions around the rule and size limits. */
export const policyDocument = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...VALID_POLICIES) },
  { weight: 6, arbitrary: mutated(VALID_POLICIES, policySymbols) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(24, 25, 26, 100).map((n) => `on_tcp_connect:\n${'  - actions: [{type: deny}]\n'.repeat(n)}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(65536, 65537, 70_000).map((size) => {
      const head = 'on_tcp_connect: []\n';
      return head + '#'.repeat(size - head.length - 1) + '\n';
    }),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 10, max: 5000 }).map((n) => `on_tcp_connect: ${'['.repeat(n)}${']'.repeat(n)}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 2, max: 12 })
      .map((n) => {
        let doc = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
        for (let i = 1; i < n; i++) doc += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
        return doc;
      }),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 10, max: 3000 })
      .map((n) => `on_tcp_connect:\n  - expressions: ["${'('.repeat(n)}true${')'.repeat(n)}"]\n    actions: [{type: deny}]\n`),
  },
  { weight: 1, arbitrary: adversarialString },
);

/** Ids as they may appear in a path or a body: real, unknown, of another kind, or junk. */
export type IdSpec = { fixture: Fixture } | { text: string };

export function idSpec(ownFixtures: readonly Fixture[], otherFixtures: readonly Fixture[]): fc.Arbitrary<IdSpec> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ownFixtures).map((fixture) => ({ fixture })) },
    { weight: 1, arbitrary: fc.constantFrom(...otherFixtures).map((fixture) => ({ fixture })) },
    { weight: 3, arbitrary: junkId.map((text) => ({ text })) },
  );
}

const PREFIXES = ['cr', 'edgtls', 'usr', 'bot', 'ak', 'op', 'acct', 'CR', 'cr_cr', ''];

/** Path-safe id text (the router never sees an invalid percent-encoding or a huge segment here). */
export const junkId = fc.oneof(
  // valid-shaped ids that do not exist, of every kind, including above the largest KSUID
  fc.tuple(fc.constantFrom(...PREFIXES), fc.oneof(base62(27), fc.constant('zzzzzzzzzzzzzzzzzzzzzzzzzzz'), fc.constant('0'.repeat(27)))).map(
    ([prefix, ksuid]) => `${prefix}_${ksuid}`,
  ),
  // near misses: wrong length, wrong separator, one bad character
  fc.tuple(fc.constantFrom('cr', 'edgtls'), fc.integer({ min: 0, max: 40 }), fc.constantFrom('_', '-', '', '__', '%5F')).chain(
    ([prefix, length, separator]) => base62(length).map((ksuid) => `${prefix}${separator}${ksuid}`),
  ),
  // the placeholders of real ids of other kinds
  fc.constantFrom('{{admin}}', '{{member}}', '{{stranger}}'),
  // arbitrary text, percent-encoded as a client would
  nastyString(40).filter((s) => s.length > 0).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
  // characters the router takes literally
  fc.string({ unit: fc.constantFrom(...";,:@!$&'()*+=~-._".split(''), ...BASE62.split('')), minLength: 1, maxLength: 30 }),
  // long, but within the router's parameter limit
  fc.integer({ min: 100, max: 500 }).map((n) => `cr_${'A'.repeat(n - 3)}`),
);

// ---------------------------------------------------------------------------------------------
// Callers and Authorization headers

export type AuthSpec =
  | { kind: 'valid'; caller: CallerName; scheme: string; spaces: number }
  | { kind: 'missing' }
  | { kind: 'notBearer'; value: string }
  | { kind: 'malformed'; value: string }
  | { kind: 'unknownKey'; value: string }
  | { kind: 'nearKey'; caller: CallerName; edit: KeyEdit }
  | { kind: 'revoked' }
  | { kind: 'deletedToken' }
  | { kind: 'tunnelToken'; fixture: CredentialFixture };

export type KeyEdit =
  | { op: 'replace'; at: number; char: string }
  | { op: 'append'; chars: string }
  | { op: 'truncate'; count: number }
  | { op: 'separator'; char: string }
  | { op: 'case' };

export const callerName = fc.constantFrom<CallerName>('admin', 'member', 'stranger');

const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR');

/** Header-safe text: what a real HTTP parser lets through in a header value. */
export const headerText = (maxLength = 40) =>
  fc.string({
    unit: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...BASE62.split('')) },
      { weight: 3, arbitrary: fc.constantFrom(...' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'.split('')) },
      { weight: 1, arbitrary: fc.constantFrom('\t', 'é', 'ÿ', '\u0080') },
    ),
    maxLength,
  });

export const authSpec: fc.Arbitrary<AuthSpec> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('valid' as const), caller: callerName, scheme, spaces: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'missing' as const }) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constantFrom('', 'Bearer', 'Bearer ', 'Bearer  ', 'Basic dXNlcjpwYXNz', 'Token abc', 'Bearerabc', 'Bearer a b', 'Bearer\tabc', 'Bearer:abc'),
        fc.tuple(fc.constantFrom('Basic', 'Digest', 'Token', 'Bearer:', 'Bear', 'Bearerx', 'OAuth'), headerText()).map(([s, v]) => `${s} ${v}`),
      )
      .map((value) => ({ kind: 'notBearer' as const, value })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constantFrom('short', 'x', '_', `${'A'.repeat(27)}_${'b'.repeat(19)}`, `${'A'.repeat(27)}_${'b'.repeat(23)}`, `${'A'.repeat(26)}_${'b'.repeat(21)}`),
        fc.string({ unit: fc.constantFrom(...'abcXYZ019_-!.~'.split('')), minLength: 1, maxLength: 60 }),
      )
      .filter((value) => !/^[0-9A-Za-z]{27}_[0-9A-Za-z]{20,22}$/.test(value))
      .map((value) => ({ kind: 'malformed' as const, value })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(base62(27), fc.integer({ min: 20, max: 22 }).chain((n) => base62(n)))
      .map(([a, b]) => ({ kind: 'unknownKey' as const, value: `${a}_${b}` })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('nearKey' as const),
      caller: callerName,
      edit: fc.oneof(
        fc.record({ op: fc.constant('replace' as const), at: fc.nat(48), char: base62Char }),
        fc.record({ op: fc.constant('append' as const), chars: fc.oneof(base62(1), base62(2), fc.constantFrom('=', ' x', '!', '\u00e9')) }),
        fc.record({ op: fc.constant('truncate' as const), count: fc.integer({ min: 1, max: 3 }) }),
        fc.record({ op: fc.constant('separator' as const), char: fc.constantFrom('-', '.', '', '__', 'a') }),
        fc.constant({ op: 'case' as const }),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'revoked' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'deletedToken' as const }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<CredentialFixture>('credAdmin', 'credMember', 'credOther').map((fixture) => ({ kind: 'tunnelToken' as const, fixture })),
  },
);

/** Applies a KeyEdit to a real key. Returns the edited key (possibly unchanged by a no-op edit). */
export function editKey(key: string, edit: KeyEdit): string {
  switch (edit.op) {
    case 'replace': {
      const at = edit.at % key.length;
      if (key[at] === '_') return key;
      const replacement = key[at] === edit.char ? BASE62[(BASE62.indexOf(edit.char) + 1) % 62]! : edit.char;
      return key.slice(0, at) + replacement + key.slice(at + 1);
    }
    case 'append':
      return key + edit.chars;
    case 'truncate':
      return key.slice(0, key.length - edit.count);
    case 'separator':
      return key.replace('_', edit.char);
    case 'case':
      return key === key.toUpperCase() ? key.toLowerCase() : key.toUpperCase();
  }
}

// ---------------------------------------------------------------------------------------------
// Version headers and Content-Type

export interface VersionSpec {
  service?: string | string[];
  ngrok?: string | string[];
  /** Header name spelling. */
  serviceName: string;
  ngrokName: string;
}

const versionValue = fc.oneof(
  { weight: 6, arbitrary: fc.constant('2') },
  { weight: 3, arbitrary: fc.constantFrom('', '1', '3', '02', '2.0', 'v2', '2,2', '２', '-2', '2 2', 'two', '20', '0x2') },
  { weight: 1, arbitrary: headerText(8).filter((v) => v.trim() === v) },
  { weight: 1, arbitrary: fc.constantFrom<string[]>(['2', '2'], ['2', '3'], ['2']) },
);

export const versionSpec: fc.Arbitrary<VersionSpec> = fc.record(
  {
    service: versionValue,
    ngrok: versionValue,
    serviceName: fc.constantFrom('service-version', 'Service-Version', 'SERVICE-VERSION'),
    ngrokName: fc.constantFrom('ngrok-version', 'Ngrok-Version', 'NGROK-VERSION'),
  },
  { requiredKeys: ['serviceName', 'ngrokName'] },
);

export const JSON_CONTENT_TYPES = [
  'application/json',
  'Application/JSON',
  'APPLICATION/JSON',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'application/json ; charset=utf-8',
];

export const OTHER_CONTENT_TYPES = [
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/vnd.api+json',
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/jsonx',
  'application/*',
  '*/*',
  'json',
  '',
  ';',
  'application/json, text/plain',
  'application/octet-stream',
];

export const contentType = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...JSON_CONTENT_TYPES) },
  { weight: 3, arbitrary: fc.constantFrom(...OTHER_CONTENT_TYPES) },
  { weight: 1, arbitrary: headerText(40) },
);

// ---------------------------------------------------------------------------------------------
// Endpoints

export interface Endpoint {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** `{id}` marks the path parameter. */
  template: string;
  /** Fields a body may carry (empty for GET/DELETE). */
  fields: readonly string[];
  /** Which fixtures are ids of the right kind for this path. */
  idKind?: 'credential' | 'edge';
  list?: boolean;
}

const CREATE_CREDENTIAL = ['description', 'metadata', 'acl', 'owner_id'];
const UPDATE_CREDENTIAL = ['id', 'description', 'metadata', 'acl'];
const EDGE = ['description', 'metadata', 'hostports', 'traffic_policy', 'backend', 'ip_restriction', 'mutual_tls', 'tls_termination', 'policy'];
const PUT_MODULE = ['id', 'module', 'enabled', 'value'];

export const ENDPOINTS: readonly Endpoint[] = [
  { method: 'POST', template: '/credentials', fields: CREATE_CREDENTIAL },
  { method: 'GET', template: '/credentials', fields: [], list: true },
  { method: 'GET', template: '/credentials/{id}', fields: [], idKind: 'credential' },
  { method: 'PATCH', template: '/credentials/{id}', fields: UPDATE_CREDENTIAL, idKind: 'credential' },
  { method: 'DELETE', template: '/credentials/{id}', fields: [], idKind: 'credential' },
  { method: 'POST', template: '/edges/tls', fields: EDGE },
  { method: 'GET', template: '/edges/tls', fields: [], list: true },
  { method: 'GET', template: '/edges/tls/{id}', fields: [], idKind: 'edge' },
  { method: 'PATCH', template: '/edges/tls/{id}', fields: ['id', ...EDGE], idKind: 'edge' },
  { method: 'DELETE', template: '/edges/tls/{id}', fields: [], idKind: 'edge' },
  { method: 'PUT', template: '/edges/tls/{id}/traffic_policy', fields: PUT_MODULE, idKind: 'edge' },
  { method: 'GET', template: '/edges/tls/{id}/traffic_policy', fields: [], idKind: 'edge' },
  { method: 'DELETE', template: '/edges/tls/{id}/traffic_policy', fields: [], idKind: 'edge' },
];

export const BODY_ENDPOINTS = ENDPOINTS.filter((endpoint) => endpoint.fields.length > 0);

/** Allowed methods per path template (SPEC §5.2, §7), as the Allow header lists them. */
export const ALLOWED: Record<string, string[]> = {
  '/credentials': ['GET', 'POST'],
  '/credentials/{id}': ['DELETE', 'GET', 'PATCH'],
  '/edges/tls': ['GET', 'POST'],
  '/edges/tls/{id}': ['DELETE', 'GET', 'PATCH'],
  '/edges/tls/{id}/traffic_policy': ['DELETE', 'GET', 'PUT'],
  '/healthz': ['GET'],
  '/readyz': ['GET'],
  '/openapi.json': ['GET'],
};

/** Methods light-my-request can send. */
export const METHODS = [
  'QUERY',
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'PROPFIND',
  'MKCOL',
  'COPY',
  'MOVE',
  'LOCK',
  'UNLOCK',
  'SEARCH',
  'REPORT',
  'PURGE',
  'LINK',
  'M-SEARCH',
];

export const CREDENTIAL_FIXTURE_LIST: readonly CredentialFixture[] = ['credAdmin', 'credMember', 'credOther'];
export const EDGE_FIXTURE_LIST: readonly EdgeFixture[] = ['edgeModule', 'edgeBare', 'edgeOther'];

/** Values that a field of this name might plausibly (or implausibly) be given. */
export function fieldValue(field: string): fc.Arbitrary<string> {
  const generic = jsonValueText([], 2);
  const nullish = fc.constant('null');
  const str = stringToken;
  const ruleList = fc.array(aclRule, { maxLength: 6 }).map((rules) => JSON.stringify(rules));
  const bigRuleList = fc.constantFrom(100, 101).map((n) => JSON.stringify(Array(n).fill('bind:*')));
  const module = objectText(
    fc.oneof(
      fc.tuple(fc.constant('value'), fc.oneof({ weight: 4, arbitrary: policyDocument.map((doc) => JSON.stringify(doc)) }, { weight: 1, arbitrary: generic })),
      fc.tuple(fc.constant('enabled'), fc.oneof(fc.constantFrom('true', 'false', 'null', '"true"', '0'), generic)),
      fc.tuple(fc.constantFrom('module', 'id', 'zz', '__proto__'), generic),
    ),
    3,
  );
  switch (field) {
    case 'description':
    case 'metadata':
      return fc.oneof({ weight: 5, arbitrary: str }, { weight: 1, arbitrary: nullish }, { weight: 1, arbitrary: generic });
    case 'acl':
      return fc.oneof({ weight: 5, arbitrary: ruleList }, { weight: 1, arbitrary: bigRuleList }, { weight: 1, arbitrary: nullish }, { weight: 1, arbitrary: generic });
    case 'hostports':
      return fc.oneof(
        { weight: 5, arbitrary: fc.array(hostport, { maxLength: 12 }).map((list) => JSON.stringify(list)) },
        { weight: 1, arbitrary: nullish },
        { weight: 1, arbitrary: generic },
      );
    case 'owner_id':
    case 'id':
      return fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('"{{admin}}"', '"{{member}}"', '"{{stranger}}"', '"{{pathId}}"', '"{{credAdmin}}"', '"{{edgeModule}}"', '""', 'null') },
        { weight: 2, arbitrary: junkId.map((id) => JSON.stringify(id)) },
        { weight: 1, arbitrary: generic },
      );
    case 'traffic_policy':
    case 'module':
      return fc.oneof({ weight: 5, arbitrary: module }, { weight: 1, arbitrary: nullish }, { weight: 1, arbitrary: generic });
    case 'value':
      return fc.oneof({ weight: 5, arbitrary: policyDocument.map((doc) => JSON.stringify(doc)) }, { weight: 1, arbitrary: generic });
    case 'enabled':
      return fc.oneof(fc.constantFrom('true', 'false', 'null'), generic);
    case 'backend':
    case 'ip_restriction':
    case 'mutual_tls':
    case 'tls_termination':
    case 'policy':
      return fc.oneof({ weight: 3, arbitrary: nullish }, { weight: 1, arbitrary: generic });
    default:
      return generic;
  }
}

/** A body for an endpoint: mostly objects of its own fields with hostile values, sometimes anything. */
export function bodyText(fields: readonly string[]): fc.Arbitrary<string> {
  const entry: fc.Arbitrary<[string, string]> = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...fields).chain((field) => fieldValue(field).map((value): [string, string] => [field, value])) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ADVERSARIAL_KEYS), jsonValueText(fields, 2)) },
  );
  return fc.oneof(
    { weight: 12, arbitrary: objectText(entry, 5) },
    { weight: 2, arbitrary: jsonValueText(fields, 3) },
    { weight: 1, arbitrary: deepNesting },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '{}', '[]', 'null', '0', '"x"', '1e400', '{"a":1}{"b":2}', '{,}', '{"a"}', '\ufeff{}', '/*c*/{}', "{'a':1}") },
  );
}
