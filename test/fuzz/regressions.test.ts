// Bugs the abuse suite found, each as the focused property that showed it, kept as regression
// tests now that they are fixed. A new finding goes here marked `todo` (saying what happens, what
// should, and where) until its fix lands.
// FUZZ_RUNS=<n> runs n cases per property instead of the defaults; see world.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ALLOWED, BASE62, OTHER_CONTENT_TYPES } from './arbitraries.js';
import { exchange } from './wire.js';
import { World, params, type Req } from './world.js';

let world: World;
before(async () => {
  world = await World.create();
});
after(() => world.close());

const admin = () => ({ authorization: world.auth('admin'), 'service-version': '2' });
const API_TEMPLATES = Object.keys(ALLOWED).filter((template) => !['/healthz', '/readyz', '/openapi.json'].includes(template));

describe('bugs found by the abuse suite', () => {
  it(
    'a path with an invalid percent-encoding is a 404 in the SPEC shape',
    // Was: Fastify answered FST_ERR_BAD_URL itself (400 {"error":"Bad Request","code":"FST_ERR_BAD_URL",…}),
    // without Ngrok-Operation-Id, Cache-Control or a log line. Fixed in a6c9209.
    async () => {
      const broken = fc.constantFrom('%', '%Z', '%ZZ', '%E0%A4%A', '%C0%80', '%ED%A0%80', '%FF', '%%', 'cr_%G1');
      const arbitrary = fc.record({
        template: fc.constantFrom(...Object.keys(ALLOWED).filter((template) => template.includes('{id}'))),
        id: fc.tuple(fc.string({ unit: fc.constantFrom(...BASE62.split('')), maxLength: 8 }), broken).map(([a, b]) => a + b),
        method: fc.constantFrom('GET', 'DELETE', 'PATCH', 'POST'),
      });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ template, id, method }) => {
          const outcome = await world.send({ method, url: template.replace('{id}', id), headers: admin() });
          assert.ok(outcome.status === 404 || outcome.status === 405, outcome.res.body);
        }),
        params(30, 0xbad001),
      );
    },
  );

  it(
    'an id longer than the router allows is a 404 in the SPEC shape',
    // Was: past maxParamLength (500) Fastify answered 414 {"code":"FST_ERR_MAX_PARAM_LENGTH","message":"'<the whole
    // path>' is exceeding…"} itself, without Ngrok-Operation-Id or Cache-Control. Fixed in a6c9209.
    async () => {
      const arbitrary = fc.record({ length: fc.integer({ min: 501, max: 4000 }), prefix: fc.constantFrom('cr_', 'edgtls_', '') });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ length, prefix }) => {
          const outcome = await world.send({ method: 'GET', url: `/credentials/${prefix}${'A'.repeat(length)}`, headers: admin() });
          assert.equal(outcome.status, 404, outcome.res.body);
        }),
        params(20, 0xbad002),
      );
    },
  );

  it(
    'the QUERY method is routed like any other: 404 on an unknown path, 405 with Allow on a known one',
    // Found: Fastify refuses a QUERY request without Content-Type (RFC 10008) before routing: 400
    // "The request could not be processed" on every path, instead of 404/405 (SPEC §2 step 1)
    async () => {
      const arbitrary = fc.constantFrom('/credentials', '/credentials/cr_x', '/edges/tls', '/edges/tls/x/traffic_policy', '/healthz', '/nowhere', '/');
      await fc.assert(
        fc.asyncProperty(arbitrary, async (path) => {
          const outcome = await world.send({ method: 'QUERY', url: path, headers: admin() });
          const known = Object.keys(ALLOWED).some((template) => new RegExp(`^${template.replace('{id}', '[^/]+')}$`).test(path));
          assert.equal(outcome.status, known ? 405 : 404, outcome.res.body);
        }),
        params(20, 0xbad003),
      );
    },
  );

  it(
    'the route is checked first: an unknown path or a wrong method is 404/405 whatever the body',
    // Found: a body on an unknown route or a method the route does not allow is framed before the
    // router answers: DELETE /edges/tls with a body → 400 ERR_NGROK_211, POST /nowhere with "{" →
    // 400 ERR_NGROK_213, with text/plain → 415, without Content-Type → 400 ERR_NGROK_216, with 1
    // MiB+1 → 413 (SPEC §2: route is step 1). The 404 route runs the body parser
    // (src/http/pipeline/body.ts parseBody) and, unauthenticated, reads up to 1 MiB on any path
    async () => {
      const arbitrary = fc.record({
        path: fc.oneof(fc.constantFrom(...API_TEMPLATES.map((t) => t.replace('{id}', 'cr_x'))), fc.constantFrom('/nowhere', '/', '/credentials/', '/v2/credentials')),
        method: fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'GET'),
        body: fc.oneof(
          fc.constantFrom<[string | undefined, string]>(['application/json', '{'], ['application/json', '[]'], [undefined, '{}'], ['application/json', '{"zz":1}']),
          fc.constantFrom(...OTHER_CONTENT_TYPES).map((type): [string | undefined, string] => [type, '{}']),
        ),
        key: fc.constantFrom(true, false),
      });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ path, method, body: [type, payload], key }) => {
          const template = Object.keys(ALLOWED).find((t) => new RegExp(`^${t.replace('{id}', '[^/]+')}$`).test(path));
          if (template !== undefined && ALLOWED[template]!.includes(method)) return; // a routed request: not this bug
          const headers: Req['headers'] = key ? admin() : { 'service-version': '2' };
          if (type !== undefined) headers['content-type'] = type;
          const outcome = await world.send({ method, url: path, headers, payload });
          assert.equal(outcome.status, template === undefined ? 404 : 405, `${method} ${path} ${type} ${payload}: ${outcome.res.body}`);
        }),
        params(60, 0xbad004),
      );
    },
  );

  it(
    'a malformed Host header never yields a uri that is not an absolute URL of the resource',
    // Found: without PUBLIC_URL the Host header is copied verbatim into every uri and Location:
    // Host "evil.example/x?y#" gives uri "http://evil.example/x?y#/credentials/cr_…"
    // (src/http/pipeline/base-url.ts); expected a 400 for a Host that is not host[:port], or a uri that
    // still names the resource (SPEC §1: uri fields are absolute URLs)
    async () => {
      const arbitrary = fc.constantFrom('evil.example/x?y#', 'a b', 'x"<script>', 'host:port:99', 'h/../../etc', '@evil.example', 'ex ample.com:80');
      await fc.assert(
        fc.asyncProperty(arbitrary, async (host) => {
          const outcome = await world.send({ method: 'GET', url: '/credentials', headers: { ...admin(), host } });
          // World.send asserts that every uri is an absolute URL naming the resource; a 400 is also fine.
          assert.ok(outcome.status === 200 || outcome.status === 400, outcome.res.body);
        }),
        params(10, 0xbad005),
      );
    },
  );

  it(
    'a path with a percent-encoded letter is routed the same for every method: 405, not 404, for a wrong one',
    // Found: GET /%63redentials is the list (the router decodes the path), but PUT /%63redentials
    // is 404 instead of 405: the 405 check matches the raw, undecoded request.url against the route
    // patterns (src/http/pipeline/routing.ts registerNotFound)
    async () => {
      const arbitrary = fc.record({
        path: fc.constantFrom('/%63redentials', '/credential%73', '/%65dges/tls', '/edges/%74ls/{{edgeModule}}', '/%63redentials/{{credAdmin}}', '/healt%68z'),
        method: fc.constantFrom('PUT', 'PATCH', 'OPTIONS', 'TRACE'),
      });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ path, method }) => {
          await world.ensureFixtures();
          const url = world.expand(path);
          const decoded = decodeURIComponent(url);
          const template = Object.keys(ALLOWED).find((t) => new RegExp(`^${t.replace('{id}', '[^/]+')}$`).test(decoded))!;
          if (ALLOWED[template]!.includes(method)) return;
          const outcome = await world.send({ method, url, headers: admin() });
          assert.equal(outcome.status, 405, `${method} ${url}: ${outcome.res.body}`);
          assert.equal(outcome.res.headers.allow, ALLOWED[template]!.join(', '));
        }),
        params(20, 0xbad006),
      );
    },
  );

  it(
    'malformed HTTP gets an error in the SPEC shape, with an operation id',
    // Found: requests the HTTP parser refuses (conflicting Content-Length, Transfer-Encoding with
    // Content-Length, a control character in a header, an unknown method token, an incomplete body,
    // headers over 16 KiB) are answered by Fastify's default client-error handler: {"error":"Bad
    // Request","message":"Client Error","statusCode":400} (431 for headers), no Ngrok-Operation-Id,
    // no Cache-Control (src/http/app.ts: no `clientErrorHandler`); an HTTP/1.1 request without
    // Host gets Node's own empty 400
    async () => {
      const key = () => world.callers.admin.key;
      const cases: Record<string, () => string> = {
        'conflicting Content-Length': () => `POST /credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key()}\r\nService-Version: 2\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{} `,
        'Transfer-Encoding and Content-Length': () => `POST /credentials HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
        'a control character in a header': () => `GET /credentials HTTP/1.1\r\nHost: x\r\nService-Version: 2\x01\r\nConnection: close\r\n\r\n`,
        'an unknown method': () => `FOO /credentials HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        'a tab around Content-Length': () => `POST /credentials HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length:\t2\t\r\nConnection: close\r\n\r\n{}`,
        'headers over 16 KiB': () => `GET /credentials HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
        'no Host': () => `GET /credentials HTTP/1.1\r\nService-Version: 2\r\nConnection: close\r\n\r\n`,
        'a path without a slash': () => `GET credentials HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      };
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...Object.keys(cases)), async (name) => {
          const outcome = await world.sendRaw(cases[name]!(), { method: 'GET', url: '/credentials' });
          assert.ok(outcome && outcome.status >= 400 && outcome.status < 500, name);
        }),
        params(16, 0xbad007),
      );
    },
  );

  it(
    'a client that aborts its body is not logged as a database outage',
    // Found: a body cut short (Content-Length larger than what arrives, then the client closes)
    // raises Node's "aborted" error with code ECONNRESET; toApiError (src/http/pipeline/errors.ts) asks
    // isUnavailableError (src/storage/errors.ts: ECONNRESET is in NETWORK_CODES) first, so it logs
    // level 50 "database unavailable" and answers 503 instead of a 400 client error
    async () => {
      const port = await world.listen();
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 3, max: 5000 }), fc.constantFrom('/credentials', '/edges/tls'), async (declared, path) => {
          const start = world.t.logs.length;
          const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${world.callers.admin.key}\r\nService-Version: 2\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{}`;
          await exchange(port, head);
          await new Promise((resolve) => setTimeout(resolve, 20));
          const lines = world.t.logs.slice(start);
          const outage = lines.filter((line) => /database unavailable|"status":5\d\d/.test(line));
          assert.deepEqual(outage, [], `an aborted body is logged as a server-side failure:\n${outage.join('\n').slice(0, 600)}`);
        }),
        params(10, 0xbad008),
      );
    },
  );

  it(
    'an empty chunked body on GET is no body (SPEC §2: only a non-empty body is 211)',
    // Found: GET with Transfer-Encoding: chunked and the empty body "0\\r\\n\\r\\n" is refused with
    // 400 ERR_NGROK_211: hasBody() in src/http/pipeline/hooks.ts counts any Transfer-Encoding as a body
    // (DELETE with the same framing is accepted)
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('/credentials', '/edges/tls', '/credentials/{{credAdmin}}'), async (path) => {
          await world.ensureFixtures();
          const url = world.expand(path);
          const bytes = `GET ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${world.callers.admin.key}\r\nService-Version: 2\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`;
          const outcome = await world.sendRaw(bytes, { method: 'GET', url });
          assert.equal(outcome?.status, 200, outcome?.res.body);
        }),
        params(6, 0xbad009),
      );
    },
  );

  it(
    'an empty id is no id: /credentials/ and /edges/tls//traffic_policy are 404 before anything else',
    // Found: the router matches /credentials/:id with id "" (and /edges/tls/:id,
    // /edges/tls/:id/traffic_policy), so the later steps answer first: GET /credentials/ without a
    // key → 401 ERR_NGROK_200, PATCH /credentials/ with a bad body → 400 ERR_NGROK_215, PUT
    // /edges/tls//traffic_policy → 400, where SPEC §2 step 1 and §3.1 ("a trailing slash: 404,
    // paths are matched exactly") want 404 first (src/http/pipeline/hooks.ts or app.ts: nothing refuses an
    // empty path parameter)
    async () => {
      const arbitrary = fc.record({
        path: fc.constantFrom('/credentials/', '/edges/tls/', '/edges/tls//traffic_policy'),
        method: fc.constantFrom('GET', 'PATCH', 'DELETE', 'PUT'),
        key: fc.boolean(),
        body: fc.constantFrom(undefined, '{"description":5}', '{"zz":1}'),
      });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ path, method, key, body }) => {
          const headers: Req['headers'] = key ? admin() : { 'service-version': '2' };
          if (body !== undefined) headers['content-type'] = 'application/json';
          const outcome = await world.send({ method, url: path, headers, payload: body });
          assert.equal(outcome.status, 404, `${method} ${path} ${body ?? ''}: ${outcome.res.body}`);
        }),
        params(30, 0xbad00a),
      );
    },
  );
});
