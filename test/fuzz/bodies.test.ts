// Hostile request bodies on every endpoint: random JSON (duplicate keys, prototype keys, lone
// surrogates, NUL, huge strings, deep nesting, 1e400, arrays for objects), raw bytes, invalid
// UTF-8, and sizes around the 1 MiB limit. World.send() checks the invariants of every answer;
// the properties add what can be predicted from the body alone.
// FUZZ_RUNS=<n> runs n cases per property instead of the defaults; see world.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  BODY_ENDPOINTS,
  CREDENTIAL_FIXTURE_LIST,
  EDGE_FIXTURE_LIST,
  ENDPOINTS,
  JSON_CONTENT_TYPES,
  bodyText,
  callerName,
  idSpec,
  nastyString,
  type Endpoint,
  type IdSpec,
} from './arbitraries.js';
import { resolveId, visible } from './requests.js';
import { World, params, type CallerName, type Outcome, type Req } from './world.js';

let world: World;
before(async () => {
  // This file's world has a PUBLIC_URL: every uri must be built on it.
  world = await World.create({ PUBLIC_URL: 'https://api.example.com' });
});
after(() => world.close());

/** Error codes a body can earn on a body endpoint once auth, version and Content-Type are fine. */
const BODY_CODES = new Set([
  'ERR_NGROK_213',
  'ERR_NGROK_214',
  'ERR_NGROK_215',
  'ERR_NGROK_600',
  'ERR_NGROK_604',
  'ERR_NGROK_605',
  'ERR_NGROK_630',
  'ERR_NGROK_634',
]);
const POLICY_CODE = /^ERR_NGROK_22\d\d$/;

function target(endpoint: Endpoint, id: IdSpec): { path: string; idText: string; fixture: ReturnType<typeof resolveId>['fixture'] } {
  if (!endpoint.idKind) return { path: endpoint.template, idText: '', fixture: undefined };
  const { text, fixture } = resolveId(id, world);
  return { path: endpoint.template.replace('{id}', text), idText: text, fixture };
}

function request(endpoint: Endpoint, path: string, caller: CallerName, contentType: string | undefined, payload: string | Buffer): Req {
  const headers: Req['headers'] = { authorization: world.auth(caller), 'service-version': '2' };
  if (contentType !== undefined) headers['content-type'] = contentType;
  return { method: endpoint.method, url: path, headers, payload };
}

const endpointAndId = (endpoints: readonly Endpoint[]) =>
  fc.constantFrom(...endpoints).chain((endpoint) =>
    fc.tuple(
      fc.constant(endpoint),
      endpoint.idKind === 'credential'
        ? idSpec(CREDENTIAL_FIXTURE_LIST, EDGE_FIXTURE_LIST)
        : idSpec(EDGE_FIXTURE_LIST, CREDENTIAL_FIXTURE_LIST),
    ),
  );

/** What a 2xx answer must show of a body the server accepted (duplicate keys: the last wins). */
async function assertReflected(endpoint: Endpoint, sent: Record<string, unknown>, outcome: Outcome, path: string, caller: CallerName): Promise<void> {
  const body = outcome.body!;
  const shown = (value: unknown) => (value === '' ? undefined : value);
  if (endpoint.template.endsWith('traffic_policy')) {
    const module = (sent.module ?? sent) as Record<string, unknown>;
    assert.deepEqual(body, { enabled: module.enabled ?? true, value: module.value });
    const stored = await world.send({ method: 'GET', url: path, headers: { authorization: world.auth(caller), 'service-version': '2' } });
    assert.equal(stored.status, 200, stored.res.body);
    if (stored.status === 200) assert.deepEqual(stored.body, body, 'GET returns the module byte for byte');
    return;
  }
  for (const field of ['description', 'metadata']) {
    if (typeof sent[field] === 'string') assert.equal(body[field], shown(sent[field]), `${field} as sent`);
  }
  for (const field of ['acl', 'hostports']) {
    if (Array.isArray(sent[field])) assert.deepEqual(body[field], sent[field], `${field} as sent, in order`);
  }
  const module = sent.traffic_policy as Record<string, unknown> | null | undefined;
  if (module !== null && typeof module === 'object') {
    assert.deepEqual(body.traffic_policy, { enabled: module.enabled ?? true, value: module.value });
  }
  if (endpoint.template === '/credentials' && endpoint.method === 'POST') {
    const owner = sent.owner_id;
    if (typeof owner === 'string' && owner !== '') assert.equal(body.owner_id, owner);
  }
}

describe('hostile bodies', () => {
  it('random JSON on every body endpoint: a 4xx of the body steps, or a success that shows what was sent', async () => {
    const arbitrary = endpointAndId(BODY_ENDPOINTS).chain(([endpoint, id]) =>
      fc.record({
        endpoint: fc.constant(endpoint),
        id: fc.constant(id),
        caller: fc.oneof({ weight: 3, arbitrary: fc.constant<CallerName>('admin') }, { weight: 2, arbitrary: callerName }),
        contentType: fc.constantFrom(...JSON_CONTENT_TYPES),
        text: bodyText(endpoint.fields),
      }),
    );
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ endpoint, id, caller, contentType, text }) => {
        await world.ensureFixtures();
        const { path, idText, fixture } = target(endpoint, id);
        const payload = world.expand(text, idText);
        const outcome = await world.send(request(endpoint, path, caller, contentType, payload));
        const { status, errorCode } = outcome;
        const where = `${endpoint.method} ${endpoint.template} ${payload.slice(0, 200)} -> ${status} ${outcome.res.body.slice(0, 300)}`;

        if (Buffer.byteLength(payload) > 1024 * 1024) return assert.equal(status, 413, where);
        if (status === 400) {
          assert.ok(BODY_CODES.has(errorCode!) || POLICY_CODE.test(errorCode!), `unexpected error code: ${where}`);
          if (errorCode === 'ERR_NGROK_630' || errorCode === 'ERR_NGROK_634') assert.equal(endpoint.template, '/credentials', where);
        } else if (status === 403) {
          assert.equal(errorCode, 'ERR_NGROK_630', where);
          assert.ok(endpoint.template === '/credentials' && caller === 'member', `only a non-admin gets 630: ${where}`);
        } else if (status === 404) {
          assert.ok(endpoint.idKind && !visible(world, caller, fixture, endpoint.idKind), `404 for a resource the caller can see: ${where}`);
        } else {
          assert.ok(status === 200 || status === 201, where);
          if (endpoint.idKind) assert.ok(visible(world, caller, fixture, endpoint.idKind), `a success on a resource the caller cannot see: ${where}`);
          let sent: unknown;
          try {
            sent = payload === '' ? {} : JSON.parse(payload);
          } catch {
            assert.fail(`a success for a body that is not JSON: ${where}`);
          }
          assert.ok(sent !== null && typeof sent === 'object' && !Array.isArray(sent), `a success for a body that is not an object: ${where}`);
          await assertReflected(endpoint, sent as Record<string, unknown>, outcome, path, caller);
        }
      }),
      params(200, 0xb0d1e5),
    );
  });

  it('a body on GET or DELETE is refused with 211 on every such endpoint, whatever it holds', async () => {
    const reads = ENDPOINTS.filter((endpoint) => endpoint.method === 'GET' || endpoint.method === 'DELETE');
    const arbitrary = endpointAndId(reads).chain(([endpoint, id]) =>
      fc.record({
        endpoint: fc.constant(endpoint),
        id: fc.constant(id),
        contentType: fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/x-www-form-urlencoded'),
        payload: fc.oneof(bodyText(['description']), fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.from(bytes))),
      }),
    );
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ endpoint, id, contentType, payload }) => {
        await world.ensureFixtures();
        const { path } = target(endpoint, id);
        const outcome = await world.send(request(endpoint, path, 'admin', contentType, payload));
        if (payload.length === 0) return;
        assert.equal(outcome.status, 400, outcome.res.body);
        assert.equal(outcome.errorCode, 'ERR_NGROK_211', outcome.res.body);
      }),
      params(80, 0xb0d1e6),
    );
  });

  it('raw bytes and invalid UTF-8: 213 when not UTF-8 or not JSON, 215 when not an object', async () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 96 }).map((array) => Buffer.from(array)),
      // a valid document with bytes spliced in: overlong forms, surrogates, truncated sequences
      fc
        .tuple(
          fc.constantFrom('{"description":"ab"}', '{"acl":["*"]}', '{"value":"x"}', '{"traffic_policy":{"value":""}}', '[]'),
          fc.nat(40),
          fc.oneof(
            fc.constantFrom([0xff], [0xfe], [0xc0, 0x80], [0xc1, 0xbf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80], [0xef, 0xbb, 0xbf], [0x00]),
            fc.uint8Array({ minLength: 1, maxLength: 4 }).map((array) => [...array]),
          ),
        )
        .map(([text, at, inserted]) => {
          const raw = Buffer.from(text);
          const i = at % (raw.length + 1);
          return Buffer.concat([raw.subarray(0, i), Buffer.from(inserted), raw.subarray(i)]);
        }),
      // text with lone surrogates, encoded by Node (each becomes U+FFFD) or escaped by hand
      nastyString(20).map((s) => Buffer.from(`{"description":"${s.replace(/["\\\u0000-\u001f]/g, '')}"}`)),
    );
    const arbitrary = endpointAndId(BODY_ENDPOINTS).chain(([endpoint, id]) =>
      fc.record({ endpoint: fc.constant(endpoint), id: fc.constant(id), contentType: fc.constantFrom(...JSON_CONTENT_TYPES), payload: bytes }),
    );
    const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ endpoint, id, contentType, payload }) => {
        await world.ensureFixtures();
        const { path } = target(endpoint, id);
        const outcome = await world.send(request(endpoint, path, 'admin', contentType, payload));
        if (payload.length === 0) return;
        let text: string;
        try {
          text = decoder.decode(payload);
        } catch {
          assert.equal(outcome.errorCode, 'ERR_NGROK_213', `invalid UTF-8 must be 213: ${outcome.res.body}`);
          return;
        }
        if (text.startsWith('\ufeff')) return; // a BOM: either reading is defensible
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          assert.equal(outcome.errorCode, 'ERR_NGROK_213', `invalid JSON must be 213: ${outcome.res.body}`);
          return;
        }
        if (value === null || typeof value !== 'object' || Array.isArray(value)) {
          assert.equal(outcome.errorCode, 'ERR_NGROK_215', `a non-object must be 215: ${outcome.res.body}`);
        }
      }),
      params(150, 0xb0d1e7),
    );
  });

  it('the 1 MiB limit: 413 without error_code just above it, never 413 at or below it', async () => {
    const limit = 1024 * 1024;
    const arbitrary = fc.record({
      endpoint: fc.constantFrom(...BODY_ENDPOINTS),
      size: fc.oneof(fc.integer({ min: limit - 8, max: limit + 8 }), fc.integer({ min: limit - 4096, max: limit + 4096 }), fc.constant(4 * limit)),
      shape: fc.constantFrom('string', 'array', 'whitespace', 'garbage'),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ endpoint, size, shape }) => {
        await world.ensureFixtures();
        const id = endpoint.idKind === 'credential' ? world.fixtures.credAdmin.id : world.fixtures.edgeBare.id;
        const path = endpoint.template.replace('{id}', id);
        let payload: string;
        if (shape === 'string') payload = `{"description":"${'x'.repeat(size - 18)}"}`;
        else if (shape === 'array') payload = `{"acl":[${'"*",'.repeat(Math.floor((size - 12) / 4))}"*"]}`.padEnd(size, ' ');
        else if (shape === 'whitespace') payload = `{${' '.repeat(size - 2)}}`;
        else payload = '#'.repeat(size);
        const outcome = await world.send(request(endpoint, path, 'admin', 'application/json', payload));
        const bytes = Buffer.byteLength(payload);
        if (bytes > limit) assert.equal(outcome.status, 413, `${bytes} bytes: ${outcome.res.body.slice(0, 200)}`);
        else assert.notEqual(outcome.status, 413, `${bytes} bytes is within the limit`);
      }),
      params(12, 0xb0d1e8),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// An independent reading of SPEC §5.3's grammar, and of the byte limits of §5.1 and §8

const isDnsLabel = (s: string) => /^[A-Za-z0-9-]{1,63}$/.test(s) && !s.startsWith('-') && !s.endsWith('-');
const isNumeric = (s: string) => /^[0-9.]+$/.test(s) && /[0-9]/.test(s);
const isIpv4 = (s: string) => {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((part) => /^(0|[1-9][0-9]{0,2})$/.test(part) && Number(part) <= 255);
};
/** domain: two or more dns-labels, at most 253 characters; all digits and dots must be IPv4. */
const isDomain = (s: string) => s.length <= 253 && s.split('.').length >= 2 && s.split('.').every(isDnsLabel) && (!isNumeric(s) || isIpv4(s));
const isPort = (s: string) => /^[1-9][0-9]{0,4}$/.test(s) && Number(s) <= 65535;
const isAddress = (s: string) => {
  const colon = s.lastIndexOf(':');
  return colon > 0 && isPort(s.slice(colon + 1)) && (isDomain(s.slice(0, colon)) || isIpv4(s.slice(0, colon)));
};
const isKeyOrValue = (s: string) => /^[A-Za-z0-9_.-]{1,63}$/.test(s);
const isLabel = (s: string) => {
  const eq = s.indexOf('=');
  if (eq < 0) return false;
  const [key, value] = [s.slice(0, eq), s.slice(eq + 1)];
  return !(key === '*' && value === '*') && (key === '*' || isKeyOrValue(key)) && (value === '*' || isKeyOrValue(value));
};
const isTarget = (t: string) =>
  t === '*' || (t.startsWith('*.') ? isDomain(t.slice(2)) && !isNumeric(t.slice(2)) : isDomain(t) || isAddress(t) || isLabel(t));
const isRule = (rule: string) => Buffer.byteLength(rule) <= 255 && (rule === '*' || (rule.startsWith('bind:') && isTarget(rule.slice(5))));

const dnsLabel = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: fc.constantFrom(...'abcxyzAZ019-'.split('')), minLength: 1, maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '-a', 'a-', 'a_b', 'xn--bcher-kva', 'a'.repeat(63), 'a'.repeat(64), '*', 'é') },
);
const octet = fc.oneof(fc.integer({ min: 0, max: 255 }).map(String), fc.constantFrom('256', '01', '00', '999', '', '1a'));
const host = fc.oneof(
  { weight: 4, arbitrary: fc.array(dnsLabel, { minLength: 1, maxLength: 4 }).map((labels) => labels.join('.')) },
  { weight: 2, arbitrary: fc.array(octet, { minLength: 3, maxLength: 5 }).map((octets) => octets.join('.')) },
  { weight: 1, arbitrary: fc.integer({ min: 240, max: 260 }).map((n) => `${'a'.repeat(n - 4)}.com`) },
  { weight: 1, arbitrary: fc.constantFrom('localhost', '[::1]', 'example.com.', '.example.com', 'EXAMPLE.COM', '123.com') },
);
const port = fc.oneof(fc.integer({ min: 1, max: 65535 }).map(String), fc.constantFrom('0', '65536', '080', '', '99999', '+80', '8o'));
const kv = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: fc.constantFrom(...'abXY09_.-'.split('')), minLength: 1, maxLength: 10 }) },
  { weight: 1, arbitrary: fc.constantFrom('*', '', 'a b', 'a:b', 'a=b', 'a'.repeat(63), 'a'.repeat(64), 'é') },
);
const aclTarget = fc.oneof(
  fc.constant('*'),
  host,
  host.map((h) => `*.${h}`),
  fc.tuple(host, port).map(([h, p]) => `${h}:${p}`),
  fc.tuple(kv, kv).map(([k, v]) => `${k}=${v}`),
  fc.tuple(host, port).map(([h, p]) => `*.${h}:${p}`),
);
const grammarRule = fc.oneof(
  { weight: 10, arbitrary: aclTarget.map((t) => `bind:${t}`) },
  { weight: 1, arbitrary: fc.constantFrom('*', 'bind:', 'BIND:*', 'Bind:a.example.com', 'connect:a.example.com', ' bind:*', 'bind:* ', 'bind:a.example.com\n') },
);
/** A rule of exactly `bytes` bytes made of a domain: "bind:" then labels of at most 63 characters. */
const ruleOfBytes = (bytes: number) => {
  const labels: string[] = [];
  let left = bytes - 'bind:'.length;
  while (left > 0) {
    const size = Math.min(63, left - (labels.length ? 1 : 0), left);
    labels.push('a'.repeat(Math.max(1, size)));
    left -= size + (labels.length > 1 ? 1 : 0);
  }
  return `bind:${labels.join('.')}`;
};

describe('grammars and limits, read independently from the SPEC', () => {
  it('ACL rules (SPEC §5.3): 201 exactly when the grammar allows the rule, else 400 ERR_NGROK_600', async () => {
    const arbitrary = fc.record({
      rules: fc.array(fc.oneof({ weight: 12, arbitrary: grammarRule }, { weight: 1, arbitrary: fc.constantFrom(254, 255, 256).map(ruleOfBytes) }), { minLength: 1, maxLength: 3 }),
      patch: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ rules, patch }) => {
        await world.ensureFixtures();
        const url = patch ? `/credentials/${world.fixtures.credAdmin.id}` : '/credentials';
        const outcome = await world.send({
          method: patch ? 'PATCH' : 'POST',
          url,
          headers: { authorization: world.auth('admin'), 'service-version': '2', 'content-type': 'application/json' },
          payload: JSON.stringify({ acl: rules }),
        });
        const valid = rules.every(isRule);
        const context = `${JSON.stringify(rules)} -> ${outcome.status} ${outcome.res.body.slice(0, 300)}`;
        if (valid) {
          assert.equal(outcome.status, patch ? 200 : 201, `the grammar allows these rules: ${context}`);
          assert.deepEqual(outcome.body!.acl, rules, context);
        } else {
          assert.equal(outcome.status, 400, `the grammar refuses a rule: ${context}`);
          assert.equal(outcome.errorCode, 'ERR_NGROK_600', context);
        }
      }),
      params(150, 0xac1001),
    );
  });

  it('hostports (SPEC §7.1): host:port as the address of §5.3, at most 10, else 400 ERR_NGROK_215', async () => {
    const hostport = fc.oneof({ weight: 6, arbitrary: fc.tuple(host, port).map(([h, p]) => `${h}:${p}`) }, { weight: 1, arbitrary: host });
    const arbitrary = fc.record({
      hostports: fc.oneof(
        { weight: 8, arbitrary: fc.array(hostport, { maxLength: 2 }) },
        { weight: 1, arbitrary: fc.constantFrom(10, 11).map((n) => Array.from({ length: n }, (_, i) => `h${i}.example.com:${i + 1}`)) },
      ),
      patch: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ hostports, patch }) => {
        await world.ensureFixtures();
        const outcome = await world.send({
          method: patch ? 'PATCH' : 'POST',
          url: patch ? `/edges/tls/${world.fixtures.edgeModule.id}` : '/edges/tls',
          headers: { authorization: world.auth('admin'), 'service-version': '2', 'content-type': 'application/json' },
          payload: JSON.stringify({ hostports }),
        });
        const valid = hostports.length <= 10 && hostports.every(isAddress);
        const context = `${JSON.stringify(hostports)} -> ${outcome.status} ${outcome.res.body.slice(0, 300)}`;
        if (valid) {
          assert.equal(outcome.status, patch ? 200 : 201, `these hostports are valid: ${context}`);
          assert.deepEqual(outcome.body!.hostports, hostports, context);
        } else {
          assert.equal(outcome.errorCode, 'ERR_NGROK_215', `a hostport is invalid: ${context}`);
        }
      }),
      params(100, 0xac1002),
    );
  });

  it('description and metadata limits count UTF-8 bytes (255 → 604, 4096 → 605), on credentials and edges', async () => {
    const unit = fc.constantFrom('a', 'é', '€', '😀');
    const arbitrary = fc.record({
      field: fc.constantFrom('description', 'metadata'),
      bytes: fc.oneof(fc.integer({ min: -4, max: 4 }), fc.integer({ min: -300, max: 300 })),
      units: fc.array(unit, { minLength: 1, maxLength: 8 }),
      target: fc.constantFrom('POST /credentials', 'PATCH /credentials', 'POST /edges/tls', 'PATCH /edges/tls'),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ field, bytes, units, target }) => {
        await world.ensureFixtures();
        const limit = field === 'description' ? 255 : 4096;
        let text = '';
        for (let i = 0; Buffer.byteLength(text) < limit + bytes; i++) text += units[i % units.length];
        const [method, base] = target.split(' ') as [string, string];
        const id = base === '/credentials' ? world.fixtures.credAdmin.id : world.fixtures.edgeBare.id;
        const outcome = await world.send({
          method,
          url: method === 'PATCH' ? `${base}/${id}` : base,
          headers: { authorization: world.auth('admin'), 'service-version': '2', 'content-type': 'application/json' },
          payload: JSON.stringify({ [field]: text }),
        });
        const size = Buffer.byteLength(text);
        const context = `${target} ${field} of ${size} bytes (${text.length} UTF-16 units) -> ${outcome.status} ${outcome.res.body.slice(0, 200)}`;
        if (size > limit) {
          assert.equal(outcome.errorCode, field === 'description' ? 'ERR_NGROK_604' : 'ERR_NGROK_605', context);
        } else {
          assert.ok(outcome.status === 200 || outcome.status === 201, context);
          assert.equal(outcome.body![field], text === '' ? undefined : text, context);
        }
      }),
      params(80, 0xac1003),
    );
  });
});

describe('owner_id (SPEC §4, §3.1)', () => {
  it('admins may name any active user or bot of their account (else 634); others only themselves (else 630)', async () => {
    const arbitrary = fc.record({
      caller: callerName,
      owner: fc.constantFrom('absent', 'null', 'empty', 'self', 'admin', 'member', 'stranger', 'revoked', 'unknown', 'junk', 'credential'),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ caller, owner }) => {
        await world.ensureFixtures();
        const ids: Record<string, unknown> = {
          null: null,
          empty: '',
          self: world.callers[caller].principal.id,
          admin: world.callers.admin.principal.id,
          member: world.callers.member.principal.id,
          stranger: world.callers.stranger.principal.id,
          revoked: world.revokedPrincipalId,
          unknown: `usr_${'1'.repeat(27)}`,
          junk: 'not an id',
          credential: world.fixtures.credAdmin.id,
        };
        const body = owner === 'absent' ? {} : { owner_id: ids[owner] };
        const outcome = await world.send({
          method: 'POST',
          url: '/credentials',
          headers: { authorization: world.auth(caller), 'service-version': '2', 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
        const context = `${caller} names ${owner}: ${outcome.status} ${outcome.res.body.slice(0, 200)}`;
        const self = world.callers[caller].principal.id;
        const named = ids[owner];
        if (owner === 'absent' || named === null || named === '' || named === self) {
          assert.equal(outcome.status, 201, context);
          assert.equal(outcome.body!.owner_id, self, context);
        } else if (!world.callers[caller].principal.admin) {
          assert.equal(outcome.errorCode, 'ERR_NGROK_630', context);
          assert.equal(outcome.status, 403, context);
        } else if (owner === 'member' && world.accountOf(caller) === 'A') {
          assert.equal(outcome.status, 201, context);
          assert.equal(outcome.body!.owner_id, named, context);
        } else {
          assert.equal(outcome.errorCode, 'ERR_NGROK_634', context);
        }
      }),
      params(60, 0x0a4e01),
    );
  });
});
