// @test-pass sqlite
// HTTP-POLICY.md: random policies of served actions on random requests never throw, never make a
// 5xx of burrow's own, never put a line break in a header, and a header the last rule of a phase
// removes never goes on: not to the agent (request phase), not to the client (response phase,
// on the agent's answer and on an answer an action made alike).
// test/e2e/http-policy-properties.test.ts checks the same through a real proxy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compilePolicy, evaluateHttpRequest, evaluateHttpResponse, RateBuckets } from '../../../src/domain/policy/index.js';
import { CONFIGURED_STATUSES, httpPolicyArb, httpRequestArb } from '../../helpers/http-policy-arbitraries.js';

/** Header lines without `removed` (when given) and without a line break or NUL anywhere. */
function assertWithout(headers: readonly string[], removed: string | undefined, where: string): void {
  if (removed !== undefined) for (let i = 0; i < headers.length; i += 2) assert.notEqual(headers[i]!.toLowerCase(), removed.toLowerCase(), `${where}: ${removed} was removed`);
  for (const value of headers) assert.doesNotMatch(value, /[\r\n\0]/, where);
}

test('random policies on random requests keep the HTTP phases’ guarantees', () => {
  fc.assert(
    fc.property(httpPolicyArb(), httpRequestArb(['Host']), fc.integer({ min: 200, max: 599 }), ({ document, removed }, req, status) => {
      const compiled = compilePolicy(document, { endpoint: 'https', maxRules: 100 });
      assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
      const configured = new Set(CONFIGURED_STATUSES);
      const context = {
        connection: { clientIp: '198.51.100.4', clientPort: 4000, serverIp: '127.0.0.1', serverPort: 443, region: 'x', startedAt: 0, endpoint: { host: 'h' }, now: 1_000 },
        request: { ...req, version: '1.1', scheme: 'https' as const, headers: req.headers.flat(), receivedAt: 0 },
        buckets: new RateBuckets(),
      };
      const decision = evaluateHttpRequest(compiled.program, context);
      if (decision.answer) {
        const s = decision.answer.status;
        assert.ok(configured.has(s) || s === 401 || s === 429 || (s >= 300 && s < 400), `status ${s}`);
        assertWithout(decision.answer.headers, undefined, 'an action’s answer');
        // the data plane runs the response phase on an action's answer too (HttpPolicy.request)
        const onAnswer = evaluateHttpResponse(compiled.program, context, decision, { status: s, headers: [...decision.answer.headers, removed, 'leak'] }, decision.vars);
        assertWithout(onAnswer.headers, removed, 'the response phase on an action’s answer');
        assert.equal(onAnswer.answer, undefined);
      } else {
        assertWithout(decision.headers, removed, 'the request as it goes to the agent');
      }
      const response = evaluateHttpResponse(compiled.program, context, decision, { status, headers: ['Server', 'x', removed, 'leak', 'X-A', 'a'] }, decision.vars);
      assertWithout(response.headers, removed, 'the agent’s answer');
      assert.equal(response.answer, undefined);
    }),
    { numRuns: 300 },
  );
});
