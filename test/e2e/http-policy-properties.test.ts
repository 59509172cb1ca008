// @test-pass sqlite
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type ngrok from '@ngrok/ngrok';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses } from '../helpers/server-process.js';
import { httpPolicyArb, httpRequestArb } from '../helpers/http-policy-arbitraries.js';

/**
 * HTTP-POLICY.md through a real proxy: random policies of served actions (the ones
 * test/domain/policy/http-properties.test.ts evaluates alone), each bound by the official SDK,
 * and a random request through it. burrow never answers a 5xx of its own making (every 5xx the
 * client gets carries the local server's mark), a header the last request rule removes never
 * reaches the local server, one the last response rule removes never reaches the client, no
 * header value carries a line break, and the process outlives them all.
 */

let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
/** The header lines that reached the local server, by run. */
const seen = new Map<string, http.IncomingHttpHeaders>();
/** Statuses an action may answer with: none in 5xx, so any 5xx the client gets is either the local server's or burrow's own. */
const ANSWER_STATUSES = [403, 404, 410, 200, 418];

before(async () => {
  server = await startDataPlane();
  session = await connectAgent(server, await createToken(server));
  local = http.createServer((req, res) => {
    const run = String(req.headers['x-run']);
    seen.set(run, req.headers);
    // the local server's answer carries the header the response phase must remove, and its mark
    res.setHeader(String(req.headers['x-leak-name']), 'leak');
    res.setHeader('x-local', '1');
    res.statusCode = Number(req.headers['x-want-status']);
    res.end('local answer\n');
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  await session?.close().catch(() => {});
  if (local) await new Promise((resolve) => local.close(resolve));
  await cleanupProcesses();
});

interface Answer {
  status: number;
  rawHeaders: string[];
}

function send(host: string, method: string, target: string, headers: Array<[string, string]>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, method, path: target, headers: [['Host', `${host}:${server.httpPort}`], ...headers].flat(), agent: false, timeout: 20_000 });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode!, rawHeaders: res.rawHeaders }));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** Header values the client can send (printable ASCII). */
const printable = (value: string): string => value.replace(/[^\x20-\x7e]/g, '?');

let runs = 0;

test('random policies through the proxy: no 5xx of burrow’s own, removed headers never go on', { timeout: 300_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(httpPolicyArb(ANSWER_STATUSES), httpRequestArb(), fc.constantFrom(200, 204, 302, 404, 500, 503), async ({ document, removed }, req, localStatus) => {
      const run = String(++runs);
      const domain = `prop-${run}.${server.edgeDomain}`;
      const address = local.address() as { port: number };
      const listener = await session.httpEndpoint().domain(domain).scheme('HTTP').policy(document).listenAndForward(`http://127.0.0.1:${address.port}`);
      try {
        const headers = req.headers.map(([name, value]): [string, string] => [name, printable(value)]);
        headers.push(['x-run', run], ['x-leak-name', removed], ['x-want-status', String(localStatus)]);
        const answer = await send(domain, req.method, req.target, headers);
        const names = answer.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
        const local = names.includes('x-local');
        if (answer.status >= 500) assert.ok(local, `burrow answered ${answer.status} itself (policy ${document})`);
        if (local) assert.equal(answer.status, localStatus);
        assert.ok(!names.includes(removed.toLowerCase()), `${removed} reached the client (policy ${document})`);
        for (const value of answer.rawHeaders) assert.doesNotMatch(value, /[\r\n\0]/);
        const reached = seen.get(run);
        if (reached) assert.equal(reached[removed.toLowerCase()], undefined, `${removed} reached the local server (policy ${document})`);
        else assert.ok(!local, 'the local server answered without seeing the request');
      } finally {
        await listener.close();
      }
    }),
    { numRuns: Number(process.env.FUZZ_RUNS ?? 30) },
  );
  // the process outlived every policy and request, and still serves
  assert.equal(server.child.exitCode, null);
  const health = await fetch(`${server.baseUrl}/readyz`);
  assert.equal(health.status, 200);
});
