// @test-pass sqlite
// fast-cel.ts: the shapes it takes are answered without cel-js, and always as cel-js answers them
// (the same value, or cel-js's own error when the activation is not what the types promise).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkCel, phaseEnvironment } from '../../../src/domain/policy/environment.js';
import { PLAIN_VARIABLES, withFastPath } from '../../../src/domain/policy/fast-cel.js';
import { PHASES } from '../../../src/domain/policy/phases.js';

const phase = PHASES.on_http_request;
const FAST = [
  "req.method == 'GET'",
  "'GET' != req.method",
  'conn.client_port > 0',
  '0 < conn.client_port',
  'conn.client_port <= 65535 && conn.server_port >= 1',
  "conn.client_port == 4 || req.method == 'POST'",
  "'x-a' in req.headers",
  'req.url.port != 0',
  "req.url.path == '/a'",
  'conn.client_ip',
  'req.url.path',
];
const SLOW = ["req.url.path.matches('^/a')", "'x' + req.method == 'xGET'", "req.method < 'Z'", 'vars.k == 1', "req.headers['x-a'][0] == 'q'", '!(conn.client_port > 0)', 'true', "has(req.method)"];

function parsedAst(expression: string): unknown {
  const parsed = phaseEnvironment(phase).parse(expression);
  assert.ok(parsed.check().valid, expression);
  return parsed.ast;
}

test('the simple shapes take the fast path, anything else does not', () => {
  for (const expression of FAST) assert.ok(withFastPath(parsedAst(expression), () => 'cel-js'), expression);
  for (const expression of SLOW) assert.equal(withFastPath(parsedAst(expression), () => 'cel-js'), undefined, expression);
});

test('a well-typed activation is answered without cel-js', () => {
  const activation = { conn: { client_port: 4000n, server_port: 443n, client_ip: '198.51.100.4' }, req: { method: 'GET', headers: new Map([['x-a', ['1']]]), url: { path: '/a', port: 0n } } };
  const expected: Record<string, unknown> = { "req.method == 'GET'": true, 'conn.client_port > 0': true, "'x-a' in req.headers": true, 'req.url.port != 0': false, 'conn.client_ip': '198.51.100.4' };
  for (const [expression, value] of Object.entries(expected)) {
    const run = withFastPath(parsedAst(expression), () => assert.fail(`${expression} went to cel-js`));
    assert.equal(run!(activation), value, expression);
  }
});

test('an activation offering its plain variables is read through them', () => {
  const plain = { conn: { client_port: 4000n }, req: { method: 'GET' } };
  const activation = {
    [PLAIN_VARIABLES]: plain,
    get conn(): never {
      return assert.fail('the typed conn was converted');
    },
  };
  const run = withFastPath(parsedAst('conn.client_port > 0'), () => assert.fail('went to cel-js'));
  assert.equal(run!(activation as unknown as Record<string, unknown>), true);
});

/** A value of any of the types an activation field could wrongly hold, or none. */
const anyValue = fc.oneof(fc.constant(undefined), fc.constant(null), fc.string({ maxLength: 3 }), fc.constantFrom('GET', 'POST', '/a', '198.51.100.4'), fc.bigInt({ min: -2n, max: 70000n }), fc.integer(), fc.boolean(), fc.constant(new Map([['x-a', ['1']]])), fc.constant({}));
const maybeObject = <T>(inner: fc.Arbitrary<T>) => fc.oneof(inner, anyValue);

test('on any activation, the fast path answers as cel-js does (value or error)', () => {
  const activation = fc.record({
    conn: maybeObject(fc.record({ client_port: anyValue, server_port: anyValue, client_ip: anyValue }, { requiredKeys: [] })),
    req: maybeObject(fc.record({ method: anyValue, headers: anyValue, url: maybeObject(fc.record({ path: anyValue, port: anyValue }, { requiredKeys: [] })) }, { requiredKeys: [] })),
  }, { requiredKeys: [] });
  const outcome = (run: () => unknown): { value?: unknown; error?: boolean } => {
    try {
      return { value: run() };
    } catch {
      return { error: true };
    }
  };
  const compiled = FAST.map((expression) => {
    const check = checkCel(expression, phase);
    assert.ok(check.ok);
    return { expression, fast: check.compiled, cel: phaseEnvironment(phase).parse(expression) };
  });
  fc.assert(
    fc.property(activation, (values) => {
      for (const { expression, fast, cel } of compiled) {
        assert.deepEqual(outcome(() => fast(values as Record<string, unknown>)), outcome(() => cel(values as Record<string, unknown>)), expression);
      }
    }),
    { numRuns: 2000 },
  );
});
