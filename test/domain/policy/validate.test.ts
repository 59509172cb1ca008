// Table-driven tests of the traffic policy validator against SPEC §7.3 and the error table of §3.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePolicy, POLICY_MAX_BYTES } from '../../../src/domain/policy/index.js';
import type { PolicyValidation, ValidatedPolicy } from '../../../src/domain/policy/index.js';

/** Strips the indentation of the first non-empty line from every line, so documents read naturally. */
function yaml(strings: TemplateStringsArray, ...values: unknown[]): string {
  const text = strings.reduce((acc, s, i) => acc + s + (i < values.length ? String(values[i]) : ''), '');
  const lines = text.replace(/^\n/, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
  return lines.map((l) => l.slice(indent)).join('\n');
}

/** A rule list with `n` trivial rules. */
function rules(n: number): string {
  return `on_tcp_connect:\n${Array.from({ length: n }, (_, i) => `  - name: r${i + 1}\n    actions: [{type: deny}]\n`).join('')}`;
}

/** A valid document padded with a trailing comment to exactly `bytes` UTF-8 bytes. */
function padded(bytes: number, filler = 'a'): string {
  const base = 'on_tcp_connect:\n  - actions: [{type: deny}]\n# ';
  const fillerBytes = Buffer.byteLength(filler);
  let doc = base + filler.repeat(Math.floor((bytes - Buffer.byteLength(base)) / fillerBytes));
  while (Buffer.byteLength(doc) < bytes) doc += 'a';
  return doc;
}

/** A single-action rule document. */
function action(text: string): string {
  return `on_tcp_connect:\n  - name: r\n    actions:\n      - ${text}\n`;
}

/** A single-expression rule document. */
function expr(expression: string): string {
  return `on_tcp_connect:\n  - actions: [{type: deny}]\n    expressions:\n      - ${JSON.stringify(expression)}\n`;
}

const SPEC_EXAMPLE = yaml`
  on_tcp_connect:                 # the only phase of a TLS edge
    - name: Block some countries  # optional string, at most 255 bytes
      expressions:                # optional list of CEL strings, ANDed; none = always
        - "conn.geo.country_code in ['XX', 'YY']"
      actions:                    # required, at least one, run in order
        - type: log
          config:
            metadata:
              country: "\${conn.geo.country_code}"
        - type: deny
`;

const SPEC_EXAMPLE_JSON = JSON.stringify({
  on_tcp_connect: [
    {
      name: 'Block some countries',
      expressions: ["conn.geo.country_code in ['XX', 'YY']"],
      actions: [{ type: 'log', config: { metadata: { country: '${conn.geo.country_code}' } } }, { type: 'deny' }],
    },
  ],
});

interface Case {
  name: string;
  doc: string;
  /** Expected error code; absent for a valid document. */
  code?: string;
  /** Substrings (case-insensitive) the message must contain. */
  msg?: string[];
  maxRules?: number;
  /** Extra checks on a valid result. */
  check?: (policy: ValidatedPolicy) => void;
}

const EXPECTED_RULES: ValidatedPolicy['rules'] = [
  {
    name: 'Block some countries',
    expressions: ["conn.geo.country_code in ['XX', 'YY']"],
    actions: [
      { type: 'log', config: { metadata: { country: '${conn.geo.country_code}' } } },
      { type: 'deny', config: null },
    ],
  },
];
const EXPECTED_EXAMPLE: ValidatedPolicy = {
  rules: EXPECTED_RULES,
  phases: { on_tcp_connect: EXPECTED_RULES, on_http_request: [], on_http_response: [] },
};

const cases: Case[] = [
  // ---- Valid documents -------------------------------------------------------------------
  { name: 'the SPEC example (YAML)', doc: SPEC_EXAMPLE, check: (p) => assert.deepEqual(p, EXPECTED_EXAMPLE) },
  { name: 'the SPEC example (JSON)', doc: SPEC_EXAMPLE_JSON, check: (p) => assert.deepEqual(p, EXPECTED_EXAMPLE) },
  {
    name: 'the SPEC example as pretty JSON indented with tabs',
    doc: JSON.stringify(JSON.parse(SPEC_EXAMPLE_JSON), null, '\t'),
    check: (p) => assert.deepEqual(p, EXPECTED_EXAMPLE),
  },
  { name: 'an empty document', doc: '', check: (p) => assert.deepEqual(p, { rules: [], phases: { on_tcp_connect: [], on_http_request: [], on_http_response: [] } }) },
  { name: 'only whitespace', doc: '  \n\n \n' },
  { name: 'only comments', doc: '# nothing here\n# at all\n' },
  { name: 'a null document (~)', doc: '~\n' },
  { name: 'a null document (null)', doc: 'null' },
  { name: 'an empty mapping', doc: '{}' },
  { name: 'a phase whose value is null', doc: 'on_tcp_connect:\n', check: (p) => assert.deepEqual(p.rules, []) },
  { name: 'an empty rule list', doc: 'on_tcp_connect: []' },
  {
    name: 'the legacy phase name inbound',
    doc: SPEC_EXAMPLE.replace('on_tcp_connect:', 'inbound:'),
    check: (p) => assert.deepEqual(p, EXPECTED_EXAMPLE),
  },
  {
    name: 'a rule with only actions',
    doc: 'on_tcp_connect:\n  - actions:\n      - type: deny\n',
    check: (p) => assert.deepEqual(p.rules[0], { name: null, expressions: [], actions: [{ type: 'deny', config: null }] }),
  },
  { name: 'expressions: null is an empty list', doc: 'on_tcp_connect:\n  - expressions:\n    actions: [{type: deny}]\n', check: (p) => assert.deepEqual(p.rules[0]!.expressions, []) },
  { name: 'expressions: [] is an empty list', doc: 'on_tcp_connect:\n  - expressions: []\n    actions: [{type: deny}]\n' },
  { name: 'deny with a null config', doc: action('type: deny\n        config:') },
  { name: 'deny with an empty config', doc: action('{type: deny, config: {}}') },
  { name: 'a rule name of exactly 255 bytes (multi-byte)', doc: `on_tcp_connect:\n  - name: "${'é'.repeat(127)}a"\n    actions: [{type: deny}]\n` },
  { name: 'an empty rule name', doc: 'on_tcp_connect:\n  - name: ""\n    actions: [{type: deny}]\n' },
  { name: 'a map(string, dyn) indexed with a string', doc: expr("actions.ngrok.log.metadata['country'] == 'XX'") },
  {
    name: 'several expressions using every variable of the phase',
    doc: yaml`
      on_tcp_connect:
        - name: everything
          expressions:
            - "conn.client_ip != '' && conn.server_ip != '' && conn.server_region == 'eu'"
            - "conn.client_port > 1024 && conn.server_port == 443"
            - "conn.ts.start > timestamp('2024-01-01T00:00:00Z')"
            - "conn.geo.city + conn.geo.country + conn.geo.country_code + conn.geo.latitude + conn.geo.longitude + conn.geo.radius + conn.geo.subdivision != ''"
            - "endpoint.addr + endpoint.host + endpoint.id + endpoint.url + endpoint.protocol != '' && endpoint.port > 0"
            - "time.now.startsWith('20')"
            - "size(actions.ngrok.log.metadata) >= 0"
            - "actions.ngrok.restrict_ips.action == 'allow' || actions.ngrok.restrict_ips.matched_cidr != ''"
            - "actions.ngrok.restrict_ips.error.code + actions.ngrok.restrict_ips.error.message == ''"
          actions: [{type: deny}]
    `,
    check: (p) => assert.equal(p.rules[0]!.expressions.length, 9),
  },
  { name: 'inCidrRange type-checks', doc: expr("inCidrRange(conn.client_ip, '10.0.0.0/8')") },
  { name: 'inCidrRanges type-checks', doc: expr("inCidrRanges(conn.client_ip, ['10.0.0.0/8', '2001:db8::/32'])") },
  { name: 'an expression with macros and standard functions', doc: expr("['DE', 'FR'].exists(c, c == conn.geo.country_code) && has(conn.geo.city)") },
  { name: 'has() of any key of a map', doc: expr('!has(actions.ngrok.log.metadata.anything)') },
  {
    name: 'log metadata with interpolations, literals and nested values',
    doc: yaml`
      on_tcp_connect:
        - actions:
            - type: log
              config:
                metadata:
                  summary: "\${conn.client_ip}:\${conn.client_port} -> \${endpoint.host}"
                  price: "costs $5, not \${'}'}"
                  count: 3
                  flag: true
                  nothing: null
                  nested: {list: ["\${conn.geo.country_code}", 1], map: {x: "\${time.now}"}}
                  map_literal: "\${ {'a': 1}['a'] }"
    `,
    check: (p) => {
      const log = p.rules[0]!.actions[0]!;
      assert.equal(log.type, 'log');
      if (log.type === 'log') {
        assert.equal(log.config.metadata['count'], 3);
        assert.deepEqual(log.config.metadata['nested'], { list: ['${conn.geo.country_code}', 1], map: { x: '${time.now}' } });
      }
    },
  },
  { name: 'log metadata may be an empty mapping', doc: action('{type: log, config: {metadata: {}}}') },
  {
    name: 'restrict-ips with IPv4 and IPv6 CIDRs and enforce false',
    doc: yaml`
      on_tcp_connect:
        - actions:
            - type: restrict-ips
              config:
                enforce: false
                allow: ["10.0.0.0/8", "192.168.1.7/32", "0.0.0.0/0", "2001:db8::/32", "::/0", "::ffff:10.0.0.0/104", "fe80::1/128"]
                deny: ["10.1.0.0/16"]
    `,
    check: (p) =>
      assert.deepEqual(p.rules[0]!.actions[0], {
        type: 'restrict-ips',
        config: {
          allow: ['10.0.0.0/8', '192.168.1.7/32', '0.0.0.0/0', '2001:db8::/32', '::/0', '::ffff:10.0.0.0/104', 'fe80::1/128'],
          deny: ['10.1.0.0/16'],
          enforce: false,
        },
      }),
  },
  {
    name: 'restrict-ips with only a deny list; enforce defaults to true',
    doc: action('{type: restrict-ips, config: {deny: ["203.0.113.0/24"]}}'),
    check: (p) => assert.deepEqual(p.rules[0]!.actions[0], { type: 'restrict-ips', config: { allow: [], deny: ['203.0.113.0/24'], enforce: true } }),
  },
  { name: 'restrict-ips with enforce: true and an empty deny list', doc: action('{type: restrict-ips, config: {allow: ["10.0.0.0/8"], deny: [], enforce: true}}') },
  { name: 'restrict-ips with a whole ${...} entry', doc: action(`{type: restrict-ips, config: {allow: ["\${'10.0.0.0/' + '8'}"]}}`) },
  { name: 'log then deny in one rule', doc: action('{type: log, config: {metadata: {a: b}}}\n      - type: deny') },
  { name: `exactly the default limit of 25 rules`, doc: rules(25), check: (p) => assert.equal(p.rules.length, 25) },
  { name: '26 rules with maxRules 30', doc: rules(26), maxRules: 30 },
  { name: `exactly ${POLICY_MAX_BYTES} bytes`, doc: padded(POLICY_MAX_BYTES) },
  {
    name: 'anchors and aliases reusing an action list',
    doc: yaml`
      on_tcp_connect:
        - name: a
          actions: &block
            - type: log
              config: {metadata: {rule: shared}}
            - type: deny
        - name: b
          actions: *block
    `,
    check: (p) => assert.deepEqual(p.rules[1]!.actions, p.rules[0]!.actions),
  },
  { name: 'a core-schema tag (!!str)', doc: 'on_tcp_connect:\n  - name: !!str 42\n    actions: [{type: deny}]\n', check: (p) => assert.equal(p.rules[0]!.name, '42') },
  { name: 'a byte order mark before the document', doc: `\uFEFF${SPEC_EXAMPLE_JSON}` },

  // ---- Size: ERR_NGROK_2221 --------------------------------------------------------------
  { name: `${POLICY_MAX_BYTES + 1} bytes`, doc: padded(POLICY_MAX_BYTES + 1), code: 'ERR_NGROK_2221', msg: ['65536'] },
  {
    name: 'multi-byte characters count as bytes (65536 characters, 65537 bytes)',
    doc: `${padded(POLICY_MAX_BYTES - 1)}é`,
    code: 'ERR_NGROK_2221',
  },
  { name: 'an oversized document is rejected before parsing', doc: `[${'x'.repeat(POLICY_MAX_BYTES)}`, code: 'ERR_NGROK_2221' },

  // ---- Parse errors and document shape: ERR_NGROK_2236 ------------------------------------
  { name: 'a YAML syntax error names its line', doc: 'on_tcp_connect:\n  - name: x\n    actions: [{type: deny}\n  - name: y\n', code: 'ERR_NGROK_2236', msg: ['line 4'] },
  { name: 'an unterminated quoted string', doc: 'on_tcp_connect:\n  - name: "x\n', code: 'ERR_NGROK_2236', msg: ['line'] },
  { name: 'tabs used as indentation', doc: 'on_tcp_connect:\n\t- actions: []\n', code: 'ERR_NGROK_2236', msg: ['line 2'] },
  { name: 'invalid JSON', doc: '{"on_tcp_connect": [,]}', code: 'ERR_NGROK_2236', msg: ['line 1'] },
  { name: 'a top-level key given twice', doc: 'on_tcp_connect: []\non_tcp_connect: []\n', code: 'ERR_NGROK_2236', msg: ['line 2', 'twice'] },
  { name: 'a key given twice inside a rule', doc: 'on_tcp_connect:\n  - name: a\n    name: b\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['line 3'] },
  { name: 'a key given twice in JSON', doc: '{"on_tcp_connect": [{"actions": [{"type": "deny", "type": "log"}]}]}', code: 'ERR_NGROK_2236', msg: ['line 1'] },
  { name: 'two YAML documents', doc: 'on_tcp_connect: []\n---\non_tcp_connect: []\n', code: 'ERR_NGROK_2236', msg: ['line 2'] },
  { name: 'an unknown top-level key', doc: 'on_tcp_connect: []\nrules: []\n', code: 'ERR_NGROK_2236', msg: ['"rules"', 'line 2'] },
  { name: 'a top level that is a list', doc: '- on_tcp_connect: []\n', code: 'ERR_NGROK_2236', msg: ['mapping'] },
  { name: 'a top level that is a string', doc: 'hello', code: 'ERR_NGROK_2236', msg: ['mapping'] },
  { name: 'a top level that is a number (JSON)', doc: '42', code: 'ERR_NGROK_2236' },
  { name: 'inbound next to on_tcp_connect', doc: 'on_tcp_connect: []\ninbound: []\n', code: 'ERR_NGROK_2236', msg: ['inbound', 'line 2'] },
  { name: 'a phase that is a mapping', doc: 'on_tcp_connect:\n  name: x\n', code: 'ERR_NGROK_2236', msg: ['list of rules'] },
  { name: 'a phase that is a string', doc: 'on_tcp_connect: deny\n', code: 'ERR_NGROK_2236' },
  { name: 'a rule that is a string', doc: 'on_tcp_connect:\n  - actions: [{type: deny}]\n  - deny\n', code: 'ERR_NGROK_2236', msg: ['rule 2', 'line 3'] },
  { name: 'a rule that is a list', doc: 'on_tcp_connect:\n  - [a, b]\n', code: 'ERR_NGROK_2236', msg: ['rule 1'] },
  { name: 'an unknown key in a rule', doc: 'on_tcp_connect:\n  - name: x\n    action: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['rule 1 ("x")', '"action"', 'line 3'] },
  { name: 'an unknown key in an action', doc: action('{type: deny, configs: {}}'), code: 'ERR_NGROK_2236', msg: ['rule 1', 'action 1', '"configs"'] },
  { name: 'an action that is a string', doc: action('deny'), code: 'ERR_NGROK_2236', msg: ['action 1'] },
  { name: 'an action without type', doc: action('{config: {}}'), code: 'ERR_NGROK_2236', msg: ['action 1', 'type'] },
  { name: 'an action whose type is null', doc: action('{type: null}'), code: 'ERR_NGROK_2236', msg: ['null'] },
  { name: 'an action whose type is a number', doc: action('{type: 7}'), code: 'ERR_NGROK_2236' },
  { name: 'expressions that is a string', doc: 'on_tcp_connect:\n  - expressions: "true"\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['expressions'] },
  { name: 'expressions that is a mapping', doc: 'on_tcp_connect:\n  - expressions: {a: b}\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236' },
  { name: 'actions that is a mapping', doc: 'on_tcp_connect:\n  - actions: {type: deny}\n', code: 'ERR_NGROK_2236', msg: ['actions'] },
  { name: 'a rule name over 255 bytes (ASCII)', doc: `on_tcp_connect:\n  - name: ${'n'.repeat(256)}\n    actions: [{type: deny}]\n`, code: 'ERR_NGROK_2236', msg: ['255'] },
  { name: 'a rule name over 255 bytes (128 × é)', doc: `on_tcp_connect:\n  - name: ${'é'.repeat(128)}\n    actions: [{type: deny}]\n`, code: 'ERR_NGROK_2236', msg: ['256 bytes'] },
  { name: 'a null rule name', doc: 'on_tcp_connect:\n  - name:\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['name', 'null'] },
  { name: 'a numeric rule name', doc: 'on_tcp_connect:\n  - name: 12\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236' },
  { name: 'a null expression', doc: 'on_tcp_connect:\n  - expressions: [null]\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['expression 1'] },
  { name: 'a boolean expression that is not a string', doc: 'on_tcp_connect:\n  - expressions: ["true", true]\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['expression 2'] },
  { name: 'a non-string key', doc: 'on_tcp_connect:\n  - 1: x\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['string', 'line 2'] },
  { name: 'a custom tag', doc: 'on_tcp_connect: !rules []\n', code: 'ERR_NGROK_2236', msg: ['tag'] },
  { name: 'a YAML 1.1 tag (!!binary)', doc: 'on_tcp_connect:\n  - name: !!binary aGVsbG8=\n    actions: [{type: deny}]\n', code: 'ERR_NGROK_2236', msg: ['line 2'] },
  { name: 'a merge key is just an unknown key', doc: 'base: &b {type: deny}\non_tcp_connect:\n  - actions: [{<<: *b}]\n', code: 'ERR_NGROK_2236' },
  { name: 'an alias without an anchor', doc: 'on_tcp_connect:\n  - actions: *missing\n', code: 'ERR_NGROK_2236', msg: ['line 2', 'anchor'] },
  { name: 'an alias that contains itself', doc: 'on_tcp_connect: &a [*a]\n', code: 'ERR_NGROK_2236' },
  {
    name: 'alias expansion bomb ("billion laughs")',
    doc: (() => {
      let doc = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
      for (let i = 1; i < 9; i++) doc += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
      return doc;
    })(),
    code: 'ERR_NGROK_2236',
    msg: ['alias'],
  },
  { name: 'deeply nested flow collections', doc: `on_tcp_connect: ${'['.repeat(5000)}${']'.repeat(5000)}`, code: 'ERR_NGROK_2236', msg: ['nested'] },
  // The action's metadata mapping is the 7th collection, so 57 more lists make 64 levels.
  { name: 'nesting of exactly 64 levels', doc: action(`{type: log, config: {metadata: {a: ${'['.repeat(57)}1${']'.repeat(57)}}}}`) },
  { name: 'nesting of 65 levels', doc: action(`{type: log, config: {metadata: {a: ${'['.repeat(58)}1${']'.repeat(58)}}}}`), code: 'ERR_NGROK_2236', msg: ['64 levels'] },
  {
    name: 'nesting beyond 64 levels through aliases',
    doc: action(
      `{type: log, config: {metadata: {a: &d ${'['.repeat(40)}1${']'.repeat(40)}}}}\n      - {type: log, config: {metadata: {b: ${'['.repeat(20)}*d${']'.repeat(20)}}}}`,
    ),
    code: 'ERR_NGROK_2236',
    msg: ['64 levels'],
  },
  { name: 'deeply nested block sequences', doc: `on_tcp_connect:\n  ${'- '.repeat(3000)}x\n`, code: 'ERR_NGROK_2236', msg: ['nested'] },

  // ---- Phases of other endpoint kinds: ERR_NGROK_2230 --------------------------------------
  { name: 'on_http_request', doc: 'on_http_request:\n  - actions: [{type: deny}]\n', code: 'ERR_NGROK_2230', msg: ['on_http_request'] },
  { name: 'on_http_response', doc: 'on_tcp_connect: []\non_http_response: []\n', code: 'ERR_NGROK_2230', msg: ['on_http_response', 'line 2'] },
  { name: 'outbound', doc: '{"outbound": []}', code: 'ERR_NGROK_2230', msg: ['outbound'] },
  { name: 'an empty HTTP phase is still an HTTP phase', doc: 'on_http_request:\n', code: 'ERR_NGROK_2230' },

  // ---- Rule count: ERR_NGROK_2264 ---------------------------------------------------------
  { name: '26 rules with the default limit', doc: rules(26), code: 'ERR_NGROK_2264', msg: ['26', '25'] },
  { name: '3 rules with maxRules 2', doc: rules(3), maxRules: 2, code: 'ERR_NGROK_2264', msg: ['at most 2'] },

  // ---- Rules without actions: ERR_NGROK_2206 -----------------------------------------------
  { name: 'a rule without actions', doc: 'on_tcp_connect:\n  - name: lonely\n', code: 'ERR_NGROK_2206', msg: ['rule 1 ("lonely")'] },
  { name: 'a rule with actions: null', doc: 'on_tcp_connect:\n  - actions: [{type: deny}]\n  - actions:\n', code: 'ERR_NGROK_2206', msg: ['rule 2'] },
  { name: 'a rule with actions: []', doc: 'on_tcp_connect:\n  - actions: []\n', code: 'ERR_NGROK_2206' },

  // ---- CEL expressions: ERR_NGROK_2200 -----------------------------------------------------
  { name: 'an HTTP-only variable (req.url)', doc: expr("req.url == '/admin'"), code: 'ERR_NGROK_2200', msg: ['"req"', 'expression 1'] },
  { name: 'an HTTP-only function (getReqHeader)', doc: expr("getReqHeader('host') == ['x']"), code: 'ERR_NGROK_2200', msg: ['getReqHeader'] },
  { name: 'an unknown field of conn', doc: expr("conn.tls_version == '1.3'"), code: 'ERR_NGROK_2200', msg: ['"tls_version"'] },
  { name: 'has() of a field the object does not declare', doc: expr('!has(conn.geo.foo)'), code: 'ERR_NGROK_2200', msg: ['has()', '"foo"', 'conn.geo'] },
  { name: 'has() of a field of a string', doc: expr('has(conn.client_ip.x)'), code: 'ERR_NGROK_2200', msg: ['has()', 'conn.client_ip'] },
  { name: 'a non-bool expression (string)', doc: expr('conn.client_ip'), code: 'ERR_NGROK_2200', msg: ['type string', 'bool'] },
  { name: 'a non-bool expression (int)', doc: expr('conn.client_port + 1'), code: 'ERR_NGROK_2200', msg: ['type int'] },
  { name: 'a CEL syntax error', doc: expr("conn.client_ip == '1.2.3.4"), code: 'ERR_NGROK_2200' },
  { name: 'a type error (string == int)', doc: expr('conn.client_ip == 5'), code: 'ERR_NGROK_2200' },
  { name: 'inCidrRange with a non-string argument', doc: expr("inCidrRange(conn.client_port, '10.0.0.0/8')"), code: 'ERR_NGROK_2200', msg: ['wrong types'] },
  { name: 'inCidrRanges with a string instead of a list', doc: expr("inCidrRanges(conn.client_ip, '10.0.0.0/8')"), code: 'ERR_NGROK_2200' },
  { name: 'an empty expression', doc: expr(''), code: 'ERR_NGROK_2200', msg: ['empty'] },
  {
    name: 'a map(string, dyn) indexed with an int',
    doc: expr("actions.ngrok.log.metadata[1] == 'b'"),
    code: 'ERR_NGROK_2200',
    msg: ['keys of type string', 'type int'],
  },
  { name: 'a map literal indexed with a value of another type', doc: expr("{'a': 1}[conn.client_port] == 1"), code: 'ERR_NGROK_2200' },
  {
    name: 'the failing expression is located by rule and position',
    doc: 'on_tcp_connect:\n  - actions: [{type: deny}]\n  - name: second\n    expressions:\n      - "true"\n      - "res.status_code == 200"\n    actions: [{type: deny}]\n',
    code: 'ERR_NGROK_2200',
    msg: ['rule 2 ("second")', 'expression 2', 'line 6'],
  },

  // ---- Action types: ERR_NGROK_2201 / 2202 ---------------------------------------------------
  { name: 'an unknown action type', doc: action('type: explode'), code: 'ERR_NGROK_2201', msg: ['"explode"'] },
  { name: 'an action type in the wrong case', doc: action('type: Deny'), code: 'ERR_NGROK_2201', msg: ['did you mean "deny"'] },
  ...['redirect', 'custom-response', 'rate-limit', 'add-headers', 'url-rewrite', 'basic-auth'].map(
    (type): Case => ({ name: `the HTTP/other-phase action ${type}`, doc: action(`type: ${type}`), code: 'ERR_NGROK_2202', msg: [type] }),
  ),
  {
    name: 'the SPEC message shape for a disallowed action',
    doc: 'on_tcp_connect:\n  - actions: [{type: deny}]\n  - name: Block countries\n    actions:\n      - type: redirect\n',
    code: 'ERR_NGROK_2202',
    msg: ['Rule 2 ("Block countries"), action 1', 'not allowed in the on_tcp_connect phase of a TLS edge', 'line 5'],
  },

  // ---- Unreachable actions: ERR_NGROK_2207 ---------------------------------------------------
  { name: 'an action after deny', doc: action('type: deny\n      - {type: log, config: {metadata: {a: b}}}'), code: 'ERR_NGROK_2207', msg: ['action 2'] },
  { name: 'deny after deny', doc: action('type: deny\n      - type: deny'), code: 'ERR_NGROK_2207' },
  { name: 'an unreachable action with a bad config is still unreachable', doc: action('type: deny\n      - type: log'), code: 'ERR_NGROK_2207' },
  { name: 'a disallowed type after deny reports the type', doc: action('type: deny\n      - type: redirect'), code: 'ERR_NGROK_2202' },

  // ---- Malformed configs: ERR_NGROK_2203 -----------------------------------------------------
  { name: 'a config that is a list', doc: action('{type: log, config: [metadata]}'), code: 'ERR_NGROK_2203', msg: ['mapping'] },
  { name: 'a config that is a string on deny', doc: action('{type: deny, config: none}'), code: 'ERR_NGROK_2203' },
  { name: 'a non-empty config on deny', doc: action('{type: deny, config: {status_code: 403}}'), code: 'ERR_NGROK_2203', msg: ['"status_code"'] },
  { name: 'an unknown key in a log config', doc: action('{type: log, config: {metadata: {a: b}, level: info}}'), code: 'ERR_NGROK_2203', msg: ['"level"'] },
  { name: 'log metadata that is a string', doc: action('{type: log, config: {metadata: hello}}'), code: 'ERR_NGROK_2203', msg: ['metadata'] },
  { name: 'log metadata that is a list', doc: action('{type: log, config: {metadata: [a]}}'), code: 'ERR_NGROK_2203' },
  { name: 'an unknown key in a restrict-ips config', doc: action('{type: restrict-ips, config: {allow: ["10.0.0.0/8"], block: []}}'), code: 'ERR_NGROK_2203', msg: ['"block"'] },
  { name: 'an allow list that is a string', doc: action('{type: restrict-ips, config: {allow: "10.0.0.0/8"}}'), code: 'ERR_NGROK_2203', msg: ['config.allow'] },
  { name: 'a numeric CIDR entry', doc: action('{type: restrict-ips, config: {deny: ["10.0.0.0/8", 10]}}'), code: 'ERR_NGROK_2203', msg: ['config.deny, entry 2'] },
  { name: 'a null CIDR entry', doc: action('{type: restrict-ips, config: {allow: [null]}}'), code: 'ERR_NGROK_2203', msg: ['entry 1', 'null'] },
  { name: 'enforce as a string', doc: action('{type: restrict-ips, config: {allow: ["10.0.0.0/8"], enforce: "false"}}'), code: 'ERR_NGROK_2203', msg: ['enforce'] },
  { name: 'enforce as a number', doc: action('{type: restrict-ips, config: {allow: ["10.0.0.0/8"], enforce: 0}}'), code: 'ERR_NGROK_2203' },

  // ---- Missing / out-of-domain config values: ERR_NGROK_2204 --------------------------------
  { name: 'log without config', doc: action('type: log'), code: 'ERR_NGROK_2204', msg: ['metadata'] },
  { name: 'log with a null config', doc: action('{type: log, config: null}'), code: 'ERR_NGROK_2204' },
  { name: 'log without metadata', doc: action('{type: log, config: {}}'), code: 'ERR_NGROK_2204', msg: ['metadata'] },
  { name: 'log with null metadata', doc: action('{type: log, config: {metadata: null}}'), code: 'ERR_NGROK_2204' },
  { name: 'restrict-ips without config', doc: action('type: restrict-ips'), code: 'ERR_NGROK_2204' },
  { name: 'restrict-ips with neither list', doc: action('{type: restrict-ips, config: {enforce: true}}'), code: 'ERR_NGROK_2204', msg: ['allow', 'deny'] },
  { name: 'restrict-ips with both lists empty', doc: action('{type: restrict-ips, config: {allow: [], deny: []}}'), code: 'ERR_NGROK_2204' },
  { name: 'restrict-ips with ip_policies', doc: action('{type: restrict-ips, config: {ip_policies: ["ipp_123"]}}'), code: 'ERR_NGROK_2204', msg: ['ip_policies'] },
  { name: 'restrict-ips with ip_policies next to a valid allow list', doc: action('{type: restrict-ips, config: {allow: ["10.0.0.0/8"], ip_policies: []}}'), code: 'ERR_NGROK_2204' },

  // ---- Interpolation: ERR_NGROK_2224 --------------------------------------------------------
  { name: 'an interpolation of an unknown variable', doc: action('{type: log, config: {metadata: {path: "${req.url.path}"}}}'), code: 'ERR_NGROK_2224', msg: ['config.metadata.path', '"req"'] },
  { name: 'an unterminated interpolation', doc: action('{type: log, config: {metadata: {ip: "${conn.client_ip"}}}'), code: 'ERR_NGROK_2224', msg: ['closing'] },
  { name: 'an empty interpolation', doc: action('{type: log, config: {metadata: {ip: "${}"}}}'), code: 'ERR_NGROK_2224', msg: ['empty'] },
  { name: 'a bad interpolation nested in a list', doc: action('{type: log, config: {metadata: {tags: [ok, "${conn.nope}"]}}}'), code: 'ERR_NGROK_2224', msg: ['config.metadata.tags, entry 2'] },
  { name: 'a bad interpolation in a restrict-ips entry', doc: action('{type: restrict-ips, config: {allow: ["${conn.client_ip +}"]}}'), code: 'ERR_NGROK_2224', msg: ['config.allow, entry 1'] },
  { name: 'a restrict-ips interpolation that is not a string', doc: action('{type: restrict-ips, config: {allow: ["${conn.client_port}"]}}'), code: 'ERR_NGROK_2224', msg: ['int'] },

  // ---- CIDRs: ERR_NGROK_2217 -------------------------------------------------------------------
  ...(
    [
      ['10.0.0.256/8', 'IPv4 octet over 255'],
      ['10.0.0.0/33', 'IPv4 prefix over 32'],
      ['10.0.0.1', 'an address without a prefix'],
      ['010.0.0.0/8', 'a leading zero in an IPv4 octet'],
      ['10.0.0.0/08', 'a leading zero in the prefix'],
      [' 10.0.0.0/8', 'surrounding whitespace'],
      ['2001:db8::/129', 'IPv6 prefix over 128'],
      ['2001:db8:::/32', 'a malformed IPv6 address'],
      ['2001:db8::1::/64', 'two "::" in an IPv6 address'],
      ['fe80::1%eth0/64', 'an IPv6 zone'],
      ['10.0.${conn.client_ip}/8', 'an interpolation that is only part of the entry'],
      ['example.com/24', 'a host name'],
    ] as const
  ).map(([cidr, what]): Case => ({
    name: `an invalid CIDR: ${what}`,
    doc: action(`{type: restrict-ips, config: {allow: ["10.0.0.0/8"], deny: [${JSON.stringify(cidr)}]}}`),
    code: 'ERR_NGROK_2217',
    msg: ['config.deny, entry 1'],
  })),
];

function run(c: Case): PolicyValidation {
  return validatePolicy(c.doc, c.maxRules === undefined ? undefined : { maxRules: c.maxRules });
}

describe('validatePolicy: table of documents', () => {
  test('the table has at least 70 documents', () => assert.ok(cases.length >= 70, `only ${cases.length}`));
  for (const c of cases) {
    test(`${c.code ?? 'valid'}: ${c.name}`, () => {
      const result = run(c);
      if (!c.code) {
        assert.ok(result.ok, `expected a valid policy, got ${JSON.stringify(result)}`);
        c.check?.(result.policy);
        return;
      }
      assert.ok(!result.ok, `expected ${c.code}, got a valid policy`);
      assert.equal(result.error.code, c.code, result.error.message);
      for (const part of c.msg ?? []) {
        assert.ok(
          result.error.message.toLowerCase().includes(part.toLowerCase()),
          `message ${JSON.stringify(result.error.message)} lacks ${JSON.stringify(part)}`,
        );
      }
    });
  }
});

describe('validatePolicy: messages', () => {
  test('every error message is a sentence that starts with a capital and ends with a full stop', () => {
    for (const c of cases.filter((x) => x.code)) {
      const result = run(c);
      assert.ok(!result.ok, c.name);
      assert.match(result.error.message, /^[A-Z].*[.!?]$/s, `${c.name}: ${result.error.message}`);
    }
  });

  test('a message never carries more than about 100 characters of user input', () => {
    const long = 'x'.repeat(5000);
    const docs = [
      expr(`${long} == 'a'`),
      action(`{type: ${long}}`),
      action(`{type: restrict-ips, config: {allow: ["${long}"]}}`),
      action(`{type: log, config: {metadata: {a: "\${${long}}"}}}`),
      `on_tcp_connect:\n  - name: ${'n'.repeat(200)}\n    actions: [{type: deny}]\n    ${long}: 1\n`,
      `${long}: 1\n`,
      `on_tcp_connect:\n  ${long}: 1\n  ${long}: 1\n`,
    ];
    for (const doc of docs) {
      const result = validatePolicy(doc);
      assert.ok(!result.ok);
      const runs = result.error.message.match(/[xn]{20,}/g) ?? [];
      const shown = runs.reduce((sum, run) => sum + run.length, 0);
      assert.ok(shown <= 100, `${shown} characters of input in: ${result.error.message}`);
      assert.ok(result.error.message.length < 600, result.error.message);
    }
  });

  test('positions are 1-based and messages say "line N" for the parse error', () => {
    const result = validatePolicy('on_tcp_connect:\n  - actions: [{type: deny}]\n  bad indent: x\n');
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2236');
    assert.match(result.error.message, /line 3/);
  });
});

describe('validatePolicy: ordering of checks', () => {
  test('size is checked before syntax', () => {
    const result = validatePolicy(`{{{ ${'x'.repeat(POLICY_MAX_BYTES)}`);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2221');
  });

  test('the shape of every rule is checked before the rule count and before CEL', () => {
    const doc = `${rules(30)}  - name: bad\n    actions: [{type: deny}]\n    extra: 1\n`;
    const result = validatePolicy(doc);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2236');
  });

  test('the rule count is checked before expressions', () => {
    const doc = `${rules(26)}  - expressions: ["req.url == '/'"]\n    actions: [{type: deny}]\n`;
    const result = validatePolicy(doc);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2264');
  });

  test('rules are validated in order: the first bad rule is reported', () => {
    const doc = 'on_tcp_connect:\n  - expressions: ["1"]\n    actions: [{type: deny}]\n  - actions: [{type: redirect}]\n';
    const result = validatePolicy(doc);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2200');
  });

  test('a negative or non-integer maxRules falls back to the default', () => {
    for (const maxRules of [-1, 2.5, Number.NaN]) {
      assert.ok(validatePolicy(rules(25), { maxRules }).ok);
      const result = validatePolicy(rules(26), { maxRules });
      assert.ok(!result.ok && result.error.code === 'ERR_NGROK_2264');
    }
  });

  test('maxRules 0 allows only empty policies', () => {
    assert.ok(validatePolicy('on_tcp_connect: []', { maxRules: 0 }).ok);
    const result = validatePolicy(rules(1), { maxRules: 0 });
    assert.ok(!result.ok && result.error.code === 'ERR_NGROK_2264');
  });
});
