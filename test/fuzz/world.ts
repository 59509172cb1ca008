/**
 * The abuse suite's harness: one app on a fresh in-memory database, a fixed cast of callers and
 * resources that is restored before every case, and `send()`, which injects one request and
 * asserts the invariants that hold for every answer, whatever was sent:
 *
 *   1. never a 5xx;
 *   2. every non-2xx answer has SPEC §3's error shape (plus the 401/404/405/413 header and
 *      error_code rules of §2 and §3);
 *   3. a rejected request, and any GET, changes nothing in the database;
 *   4. successful answers are well formed (field order of §5.1/§7.1, token only in a 201);
 *   5. no secret (API key, tunnel token) appears in an answer or a log line, except a new token
 *      in its own 201;
 * and besides: a successful write changes only the row it names, no request takes longer than
 * FUZZ_SLOW_MS (3000 by default), and nothing reaches Object.prototype or Array.prototype.
 *
 * Run sizes: every property runs a bounded number of cases in `npm test`. Set FUZZ_RUNS=<n> to
 * run n cases per property instead, and FUZZ_SEED=<n> (or FUZZ_SEED=random) to explore another
 * part of the input space; a failure prints the seed and the shrunk counterexample, and
 * FUZZ_SEED=<that seed> replays it. FUZZ_STATS=1 prints how often each route answered each
 * status and error code, to see what the generators reach.
 */
import assert from 'node:assert/strict';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Parameters } from 'fast-check';
import { createTestApp, json, type Caller, type TestApp } from '../helpers/app.js';
import { OPERATION_ID } from '../helpers/assertions.js';
import { asInjectResponse, exchange, parseAnswer } from './wire.js';

// ---------------------------------------------------------------------------------------------
// Run sizes and seeds

const runsOverride = parsePositive(process.env.FUZZ_RUNS, 'FUZZ_RUNS');
const seedOverride = parseSeed(process.env.FUZZ_SEED);

function parsePositive(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(raw)}`);
  return value;
}

function parseSeed(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  if (raw === 'random') {
    const seed = Math.floor(Math.random() * 0x7fffffff);
    console.log(`# FUZZ_SEED=random picked seed ${seed}`);
    return seed;
  }
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new Error(`FUZZ_SEED must be a whole number or "random", got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * fc.assert parameters: `defaultRuns` cases (FUZZ_RUNS overrides), the property's fixed seed
 * (FUZZ_SEED overrides). fast-check reports the seed and path of a failure in its message.
 */
export function params<T>(defaultRuns: number, seed: number): Parameters<T> {
  return { numRuns: runsOverride ?? defaultRuns, seed: seedOverride ?? seed, includeErrorInReport: true };
}

// ---------------------------------------------------------------------------------------------
// Requests

export type HeaderValue = string | string[];

export interface Req {
  method: string;
  /** Path and query, as sent. Placeholders `{{name}}` are expanded by World.expand(). */
  url: string;
  headers: Record<string, HeaderValue>;
  payload?: string | Buffer | undefined;
}

export interface Outcome {
  res: LightMyRequestResponse;
  status: number;
  /** The parsed JSON body, or undefined when there is none or it is not JSON. */
  body: Record<string, unknown> | undefined;
  errorCode: string | undefined;
}

export const ERROR_CODE = /^ERR_NGROK_\d+$/;
const KSUID = '[0-9A-Za-z]{27}';
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const CREDENTIAL_FIELDS = ['id', 'uri', 'created_at', 'description', 'metadata', 'token', 'acl', 'owner_id'];
const EDGE_FIELDS = [
  'id',
  'uri',
  'created_at',
  'description',
  'metadata',
  'hostports',
  'backend',
  'ip_restriction',
  'mutual_tls',
  'tls_termination',
  'traffic_policy',
  'policy',
];
const OPTIONAL_FIELDS = new Set(['description', 'metadata']);

export const DENY_POLICY = 'on_tcp_connect:\n  - actions:\n      - type: deny\n';

// ---------------------------------------------------------------------------------------------
// The world

export type CallerName = 'admin' | 'member' | 'stranger';
export type CredentialFixture = 'credAdmin' | 'credMember' | 'credOther';
export type EdgeFixture = 'edgeModule' | 'edgeBare' | 'edgeOther';
export type Fixture = CredentialFixture | EdgeFixture;

export const CREDENTIAL_FIXTURES: readonly CredentialFixture[] = ['credAdmin', 'credMember', 'credOther'];
export const EDGE_FIXTURES: readonly EdgeFixture[] = ['edgeModule', 'edgeBare', 'edgeOther'];

interface FixtureSpec {
  owner: CallerName;
  /** Account A (admin, member) or B (stranger). */
  account: 'A' | 'B';
  create: { url: string; body: unknown };
  /** Edges: whether the traffic policy module must be present at the start of each case. */
  module?: boolean;
}

const FIXTURES: Record<Fixture, FixtureSpec> = {
  credAdmin: {
    owner: 'admin',
    account: 'A',
    create: { url: '/credentials', body: { description: 'fixture', metadata: '{"k":"v"}', acl: ['bind:*.example.com'] } },
  },
  credMember: { owner: 'member', account: 'A', create: { url: '/credentials', body: {} } },
  credOther: { owner: 'stranger', account: 'B', create: { url: '/credentials', body: { description: 'other account' } } },
  edgeModule: {
    owner: 'admin',
    account: 'A',
    module: true,
    create: { url: '/edges/tls', body: { description: 'fixture', hostports: ['a.example.com:443'], traffic_policy: { value: DENY_POLICY } } },
  },
  edgeBare: { owner: 'member', account: 'A', module: false, create: { url: '/edges/tls', body: {} } },
  edgeOther: {
    owner: 'stranger',
    account: 'B',
    module: true,
    create: { url: '/edges/tls', body: { traffic_policy: { enabled: false, value: DENY_POLICY } } },
  },
};

const ACCOUNT_OF: Record<CallerName, 'A' | 'B'> = { admin: 'A', member: 'A', stranger: 'B' };

/** Tables whose rows a rejected request must leave alone (rate-limit counters legitimately move). */
const SNAPSHOT_TABLES = ['accounts', 'principals', 'api_keys', 'credentials', 'tls_edges', 'bootstrap'] as const;

/** The longest one request may take (FUZZ_SLOW_MS overrides; generous, to stay clear of CI noise). */
const SLOW_MS = parsePositive(process.env.FUZZ_SLOW_MS, 'FUZZ_SLOW_MS') ?? 3000;
const OBJECT_PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype);
const ARRAY_PROTOTYPE_KEYS = Object.getOwnPropertyNames(Array.prototype);

/** Rows beyond the fixtures that cases may leave behind before they are cleared away. */
const MAX_EXTRA_ROWS = 40;

export class World {
  readonly callers: Record<CallerName, Caller>;
  /** Ids and tokens of the current fixtures; a fixture deleted by a case is recreated. */
  readonly fixtures = {} as Record<Fixture, { id: string; token?: string }>;
  /** Every secret the suite knows: the API keys, a revoked key, and every token ever returned. */
  readonly secrets = new Set<string>();
  /** A revoked API key (401 ERR_NGROK_203). */
  revokedKey = '';
  /** The token of a deleted credential (401 ERR_NGROK_203). */
  deletedToken = '';
  /** A revoked user of account A: no longer a possible owner. */
  revokedPrincipalId = '';
  /** `METHOD route status code` → count, printed by close() when FUZZ_STATS is set. */
  readonly stats = new Map<string, number>();

  private constructor(
    readonly t: TestApp,
    member: Caller,
    stranger: Caller,
  ) {
    this.callers = { admin: t.admin, member, stranger };
  }

  static async create(env: Record<string, string> = {}): Promise<World> {
    const t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0', ...env });
    const member = await t.newCaller({ kind: 'bot', admin: false });
    const stranger = await t.newCaller({ kind: 'user', admin: true, newAccount: true });
    const world = new World(t, member, stranger);
    for (const caller of Object.values(world.callers)) world.secrets.add(caller.key);

    const revoked = await t.accounts.createApiKey(t.admin.principal.id, 'revoked');
    await t.accounts.revokeApiKey(revoked.key.id);
    world.revokedKey = revoked.secret;
    world.secrets.add(revoked.secret);

    const gone = await t.accounts.createPrincipal(t.admin.principal.accountId, 'user', 'gone', false);
    await t.accounts.revokePrincipal(gone.id);
    world.revokedPrincipalId = gone.id;

    const doomed = await world.setup('POST', '/credentials', 'admin', {}, 201);
    world.deletedToken = String(doomed.token);
    world.secrets.add(world.deletedToken);
    await world.setup('DELETE', `/credentials/${String(doomed.id)}`, 'admin', undefined, 204);

    await world.ensureFixtures();
    return world;
  }

  close(): Promise<void> {
    if (process.env.FUZZ_STATS) {
      const lines = [...this.stats.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, count]) => `#   ${String(count).padStart(5)}  ${key}`);
      console.log(`# answers:\n${lines.join('\n')}`);
    }
    return this.t.close();
  }

  accountOf(caller: CallerName): 'A' | 'B' {
    return ACCOUNT_OF[caller];
  }

  fixtureAccount(fixture: Fixture): 'A' | 'B' {
    return FIXTURES[fixture].account;
  }

  fixtureHasModule(fixture: EdgeFixture): boolean {
    return FIXTURES[fixture].module === true;
  }

  /** A request the suite itself makes (fixtures): must succeed with `status`. */
  private async setup(method: string, url: string, caller: CallerName, body: unknown, status: number): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.callers[caller].key}`, 'service-version': '2' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await this.t.app.inject({
      method: method as InjectOptions['method'],
      url,
      headers,
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    assert.equal(res.statusCode, status, `fixture setup ${method} ${url}: ${res.body}`);
    const parsed = res.body === '' ? {} : json(res);
    if (typeof parsed.token === 'string') this.secrets.add(parsed.token);
    return parsed;
  }

  /**
   * Restores the cast before a case: recreates deleted fixtures, puts each edge's module back
   * into its initial presence, and clears away rows that earlier cases created beyond a bound.
   */
  async ensureFixtures(): Promise<void> {
    const db = this.t.store.db;
    const credentials = new Set((await db.selectFrom('credentials').select('id').execute()).map((row) => row.id));
    const edges = new Map(
      (await db.selectFrom('tls_edges').select(['id', 'policy_value']).execute()).map((row) => [row.id, row.policy_value]),
    );
    for (const name of CREDENTIAL_FIXTURES) {
      if (this.fixtures[name] && credentials.has(this.fixtures[name].id)) continue;
      const spec = FIXTURES[name];
      const created = await this.setup('POST', spec.create.url, spec.owner, spec.create.body, 201);
      this.fixtures[name] = { id: String(created.id), token: String(created.token) };
    }
    for (const name of EDGE_FIXTURES) {
      const spec = FIXTURES[name];
      const current = this.fixtures[name];
      if (!current || !edges.has(current.id)) {
        const created = await this.setup('POST', spec.create.url, spec.owner, spec.create.body, 201);
        this.fixtures[name] = { id: String(created.id) };
        continue;
      }
      const hasModule = edges.get(current.id) !== null;
      if (spec.module && !hasModule) {
        await this.setup('PUT', `/edges/tls/${current.id}/traffic_policy`, spec.owner, { value: DENY_POLICY }, 200);
      } else if (!spec.module && hasModule) {
        await this.setup('DELETE', `/edges/tls/${current.id}/traffic_policy`, spec.owner, undefined, 204);
      }
    }
    const keepCredentials = CREDENTIAL_FIXTURES.map((name) => this.fixtures[name].id);
    const keepEdges = EDGE_FIXTURES.map((name) => this.fixtures[name].id);
    if (credentials.size > keepCredentials.length + MAX_EXTRA_ROWS) {
      await db.deleteFrom('credentials').where('id', 'not in', keepCredentials).execute();
    }
    if (edges.size > keepEdges.length + MAX_EXTRA_ROWS) {
      await db.deleteFrom('tls_edges').where('id', 'not in', keepEdges).execute();
    }
  }

  /** Every row of every table that requests may change, in a canonical text form. */
  async snapshot(): Promise<string> {
    const db = this.t.store.db;
    const parts: string[] = [];
    for (const table of SNAPSHOT_TABLES) {
      const rows = await db.selectFrom(table).selectAll().execute();
      const lines = rows.map((row) => JSON.stringify(row)).sort();
      parts.push(`${table}:\n${lines.join('\n')}`);
    }
    return parts.join('\n');
  }

  /** Replaces `{{name}}` placeholders with the current ids; `{{pathId}}` stands inside JSON strings. */
  expand(text: string, pathId?: string): string {
    if (!text.includes('{{')) return text;
    return text.replace(/\{\{([A-Za-z]+)\}\}/g, (whole, name: string) => {
      switch (name) {
        case 'admin':
        case 'member':
        case 'stranger':
          return this.callers[name].principal.id;
        case 'pathId':
          // The id as the router hands it to the handler (decoded), escaped for a JSON string.
          return pathId === undefined ? whole : JSON.stringify(decodePathSegment(pathId)).slice(1, -1);
        default:
          if (name in FIXTURES) return this.fixtures[name as Fixture].id;
          return whole;
      }
    });
  }

  /** Bearer header for a caller. */
  auth(caller: CallerName): string {
    return `Bearer ${this.callers[caller].key}`;
  }

  /**
   * Sends one request and asserts the invariants every answer keeps (see the file comment).
   * Returns the outcome for the property's own, more specific, assertions.
   */
  async send(req: Req): Promise<Outcome> {
    const before = await this.snapshot();
    const logStart = this.t.logs.length;
    const started = performance.now();
    const res = await this.t.app.inject({
      method: req.method as InjectOptions['method'],
      url: req.url,
      headers: req.headers,
      ...(req.payload === undefined ? {} : { payload: req.payload }),
    });
    const elapsed = performance.now() - started;
    // No input may make one request slow (catastrophic backtracking, quadratic parsing, …).
    assert.ok(elapsed < SLOW_MS, `a request took ${Math.round(elapsed)} ms: ${req.method} ${req.url.slice(0, 200)}`);
    // Nothing a request holds (a "__proto__" key, say) may reach the shared prototypes.
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype), OBJECT_PROTOTYPE_KEYS, 'Object.prototype was polluted');
    assert.deepEqual(Object.getOwnPropertyNames(Array.prototype), ARRAY_PROTOTYPE_KEYS, 'Array.prototype was polluted');
    const after = await this.snapshot();
    const outcome = this.check(req, res, before, after, this.t.logs.slice(logStart));
    return outcome;
  }

  private port: number | undefined;

  /** Starts listening on a free local port (for raw HTTP); returns the port. */
  async listen(): Promise<number> {
    if (this.port === undefined) {
      await this.t.app.listen({ host: '127.0.0.1', port: 0 });
      const address = this.t.app.server.address();
      this.port = typeof address === 'object' && address ? address.port : 0;
    }
    return this.port;
  }

  /**
   * Sends raw bytes over a socket (listen() first) and checks the answer like send() does.
   * `meta` says which method and path the bytes carry. Returns undefined when the server wrote
   * no HTTP answer at all (the check then fails unless `allowSilence`).
   */
  async sendRaw(bytes: string | Buffer, meta: { method: string; url: string }, options: { allowSilence?: boolean } = {}): Promise<Outcome | undefined> {
    const port = await this.listen();
    const before = await this.snapshot();
    const logStart = this.t.logs.length;
    const raw = await exchange(port, bytes);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const after = await this.snapshot();
    const answer = parseAnswer(raw);
    if (!answer) {
      assert.ok(options.allowSilence, `no HTTP answer to ${JSON.stringify(String(bytes).slice(0, 200))}: ${JSON.stringify(raw.slice(0, 200))}`);
      assertSameState(before, after, 'a request without an answer changed the database');
      return undefined;
    }
    return this.check({ ...meta, headers: {} }, asInjectResponse(answer), before, after, this.t.logs.slice(logStart));
  }

  private check(req: Req, res: LightMyRequestResponse, before: string, after: string, logs: string[]): Outcome {
    const status = res.statusCode;
    const where = () => `${req.method} ${req.url.slice(0, 200)} -> ${status} ${res.body.slice(0, 400)}`;
    const pathname = decodeUnreserved(serverUrl(req.url).pathname);

    // Invariant 1: never a 5xx; only the statuses the API uses.
    assert.ok(status < 500, `a 5xx answer: ${where()}`);
    assert.ok([200, 201, 204].includes(status) || (status >= 400 && status < 500), `unexpected status: ${where()}`);

    // SPEC §1: every answer carries an operation id and Cache-Control: no-store.
    const operationId = res.headers['ngrok-operation-id'];
    assert.match(String(operationId), OPERATION_ID, `no Ngrok-Operation-Id: ${where()}`);
    assert.equal(res.headers['cache-control'], 'no-store', `no Cache-Control: no-store: ${where()}`);

    let body: Record<string, unknown> | undefined;
    let errorCode: string | undefined;
    const bodiless = req.method === 'HEAD';

    if (status >= 400) {
      // Invariant 2: the SPEC §3 error shape.
      if (status === 401) assert.equal(res.headers['www-authenticate'], 'Bearer', `401 without WWW-Authenticate: ${where()}`);
      if (status === 405) {
        const allow = String(res.headers.allow ?? '');
        assert.match(allow, /^[A-Z]+(, [A-Z]+)*$/, `405 without a proper Allow header: ${where()}`);
        assert.ok(!allow.split(', ').includes(req.method), `405 whose Allow names the method used: ${where()}`);
      }
      if (!bodiless) {
        assert.equal(res.headers['content-type'], 'application/json', `error not JSON: ${where()}`);
        body = parseJson(res.body, where);
        const keys = Object.keys(body);
        assert.deepEqual(
          keys,
          ['error_code', 'status_code', 'msg', 'details'].filter((key) => key in body!),
          `error body has other or misordered keys: ${where()}`,
        );
        assert.equal(body.status_code, status, `status_code differs from the status: ${where()}`);
        assert.equal(typeof body.msg, 'string', `msg not a string: ${where()}`);
        assert.ok((body.msg as string).trim().length > 0, `empty msg: ${where()}`);
        const details = body.details;
        assert.ok(details !== null && typeof details === 'object' && !Array.isArray(details), `details not an object: ${where()}`);
        for (const [key, value] of Object.entries(details as object)) {
          assert.equal(typeof value, 'string', `details.${key} is not a string: ${where()}`);
        }
        assert.equal((details as Record<string, unknown>).operation_id, operationId, `details.operation_id differs: ${where()}`);
        if ('error_code' in body) {
          assert.equal(typeof body.error_code, 'string', where());
          assert.match(body.error_code as string, ERROR_CODE, `malformed error_code: ${where()}`);
          errorCode = body.error_code as string;
        }
        if (status === 404 || status === 405 || status === 413) {
          assert.equal(errorCode, undefined, `a ${status} must not carry an error_code: ${where()}`);
        }
        if (status === 404) assert.equal(body.msg, 'Resource not found', where());
        if (status === 401) assert.match(String(errorCode), /^ERR_NGROK_20[0-7]$/, where());
      }
      // Invariant 3: a rejected request changes nothing.
      assertSameState(before, after, `a rejected request changed the database: ${where()}`);
    } else {
      // Invariant 4: successful answers are well formed.
      if (req.method === 'GET') assertSameState(before, after, `a GET changed the database: ${where()}`);
      if (status === 204) {
        assert.equal(res.body, '', `a 204 with a body: ${where()}`);
      } else if (pathname === '/metrics') {
        assert.ok(res.body.length > 0, where());
      } else {
        assert.equal(res.headers['content-type'], 'application/json', `success not JSON: ${where()}`);
        body = parseJson(res.body, where);
        checkSuccessBody(req.method, pathname, status, body, res, where, this.t.config.publicUrl);
      }
      if (req.method !== 'GET') assertOnlyTargetChanged(req.method, pathname, body, before, after, where);
    }

    // Invariant 5: no secret in the answer (headers included) or in a log line.
    const ownToken = status === 201 && typeof body?.token === 'string' ? body.token : undefined;
    const headerText = JSON.stringify(res.headers);
    for (const secret of this.secrets) {
      for (const part of secretParts(secret)) {
        assert.ok(!res.body.includes(part), `a secret (${secret.slice(0, 6)}…) appears in the answer: ${where()}`);
        assert.ok(!headerText.includes(part), `a secret (${secret.slice(0, 6)}…) appears in a header: ${where()}`);
        for (const line of logs) assert.ok(!line.includes(part), `a secret (${secret.slice(0, 6)}…) appears in a log line: ${line}`);
      }
    }
    if (ownToken !== undefined) {
      const withoutToken = res.body.replace(ownToken, '');
      for (const part of secretParts(ownToken)) {
        assert.ok(!withoutToken.includes(part), `the new token appears twice in its 201: ${where()}`);
        assert.ok(!headerText.includes(part), `the new token appears in a header: ${where()}`);
        for (const line of logs) assert.ok(!line.includes(part), `the new token appears in a log line: ${line}`);
      }
      this.rememberToken(ownToken);
    }
    // SPEC §1: the operation id is the request id of every log line of the request.
    for (const line of logs) {
      const entry = parseJson(line, () => `log line is not JSON: ${line}`);
      if ('operation_id' in entry) assert.equal(entry.operation_id, operationId, `log line of another operation: ${line}`);
    }

    const statsKey = `${req.method} ${routeOf(pathname)} ${status} ${errorCode ?? ''}`.trim();
    this.stats.set(statsKey, (this.stats.get(statsKey) ?? 0) + 1);
    return { res, status, body, errorCode };
  }

  /** Tokens from 201s become secrets; the oldest fuzz-made ones are forgotten past a bound. */
  private rememberToken(token: string): void {
    this.secrets.add(token);
    if (this.secrets.size > 400) {
      const keep = new Set([
        ...Object.values(this.callers).map((caller) => caller.key),
        this.revokedKey,
        this.deletedToken,
        ...CREDENTIAL_FIXTURES.map((name) => this.fixtures[name]?.token ?? ''),
      ]);
      let drop = 100;
      for (const secret of this.secrets) {
        if (drop === 0) break;
        if (!keep.has(secret)) {
          this.secrets.delete(secret);
          drop--;
        }
      }
    }
  }
}

/** The URL the server sees for an injected one: light-my-request normalizes it this way. */
export function serverUrl(url: string): URL {
  return url.startsWith('//') ? new URL(`http://localhost${url}`) : new URL(url, 'http://localhost');
}

/** A path segment decoded as the router decodes a parameter (left as is when malformed). */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** RFC 3986 §6.2.2.2: a percent-encoded unreserved character is the character itself. */
export function decodeUnreserved(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (whole, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(char) ? char : whole;
  });
}

/** The route template a path falls under, for statistics. */
function routeOf(pathname: string): string {
  const s = pathname.split('/');
  if (s[1] === 'credentials' && s.length <= 3) return s.length === 2 ? '/credentials' : '/credentials/{id}';
  if (s[1] === 'edges' && s[2] === 'tls') {
    if (s.length === 3) return '/edges/tls';
    if (s.length === 4) return '/edges/tls/{id}';
    if (s.length === 5 && s[4] === 'traffic_policy') return '/edges/tls/{id}/traffic_policy';
  }
  return ['/healthz', '/readyz', '/metrics', '/openapi.json'].includes(pathname) ? pathname : '(other)';
}

/** The whole secret, and its random half (which alone is as sensitive). */
function secretParts(secret: string): string[] {
  const underscore = secret.indexOf('_');
  return underscore < 0 ? [secret] : [secret, secret.slice(underscore + 1)];
}

function parseJson(text: string, where: () => string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    assert.fail(`not JSON: ${where()}`);
  }
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), `JSON but not an object: ${where()}`);
  return value as Record<string, unknown>;
}

function assertSameState(before: string, after: string, message: string): void {
  if (before === after) return;
  const a = before.split('\n');
  const b = after.split('\n');
  const removed = a.filter((line) => !b.includes(line)).slice(0, 5);
  const added = b.filter((line) => !a.includes(line)).slice(0, 5);
  assert.fail(`${message}\n  rows before: ${removed.join('\n    ')}\n  rows after: ${added.join('\n    ')}`);
}

/**
 * A successful write changes only what it names: a POST adds one row of its kind; a PATCH, PUT or
 * DELETE touches only the row of the id in its path. Nothing else in any table moves.
 */
function assertOnlyTargetChanged(
  method: string,
  pathname: string,
  body: Record<string, unknown> | undefined,
  before: string,
  after: string,
  where: () => string,
): void {
  if (before === after) return;
  const rows = (text: string) => {
    const map = new Map<string, string>();
    let table = '';
    for (const line of text.split('\n')) {
      if (line.endsWith(':') && !line.startsWith('{')) table = line.slice(0, -1);
      else if (line !== '') map.set(`${table} ${String((JSON.parse(line) as { id: unknown }).id)}`, line);
    }
    return map;
  };
  const a = rows(before);
  const b = rows(after);
  const touched = new Set<string>();
  for (const [key, line] of a) if (b.get(key) !== line) touched.add(key);
  for (const key of b.keys()) if (!a.has(key)) touched.add(key);
  const segments = pathname.split('/');
  const table = segments[1] === 'credentials' ? 'credentials' : 'tls_edges';
  const id = method === 'POST' ? String(body?.id) : decodeURIComponent(segments[segments[1] === 'credentials' ? 2 : 3] ?? '');
  const allowed = `${table} ${id}`;
  const others = [...touched].filter((key) => key !== allowed);
  assert.deepEqual(others, [], `a ${method} changed rows it does not name (${allowed}): ${where()}`);
  if (method === 'POST') assert.ok(!a.has(allowed) && b.has(allowed), `a POST did not add its row: ${where()}`);
  if (method === 'DELETE' && segments.length <= 4) assert.ok(a.has(allowed) && !b.has(allowed), `a DELETE did not remove its row: ${where()}`);
}

function checkSuccessBody(
  method: string,
  pathname: string,
  status: number,
  body: Record<string, unknown>,
  res: LightMyRequestResponse,
  where: () => string,
  publicUrl: string | undefined,
): void {
  const segments = pathname.split('/');
  if (pathname === '/credentials' && method === 'POST') {
    assert.equal(status, 201, where());
    checkCredential(body, true, where, publicUrl);
    assert.equal(res.headers.location, body.uri, `Location differs from uri: ${where()}`);
  } else if (pathname === '/edges/tls' && method === 'POST') {
    assert.equal(status, 201, where());
    checkEdge(body, where, publicUrl);
    assert.equal(res.headers.location, body.uri, `Location differs from uri: ${where()}`);
  } else if (pathname === '/credentials' && method === 'GET') {
    checkList(body, 'credentials', (item) => checkCredential(item, false, where, publicUrl), where, publicUrl);
  } else if (pathname === '/edges/tls' && method === 'GET') {
    checkList(body, 'tls_edges', (item) => checkEdge(item, where, publicUrl), where, publicUrl);
  } else if (segments.length === 3 && segments[1] === 'credentials') {
    assert.equal(status, 200, where());
    checkCredential(body, false, where, publicUrl);
  } else if (segments.length === 4 && segments[1] === 'edges' && segments[2] === 'tls') {
    assert.equal(status, 200, where());
    checkEdge(body, where, publicUrl);
  } else if (segments.length === 5 && segments[4] === 'traffic_policy') {
    assert.equal(status, 200, where());
    checkModule(body, where);
  } else if (['/healthz', '/readyz', '/openapi.json'].includes(pathname)) {
    assert.equal(status, 200, where());
  } else {
    assert.fail(`a success on a path that is not served: ${where()}`);
  }
}

function checkFieldOrder(body: Record<string, unknown>, fields: string[], where: () => string): void {
  const keys = Object.keys(body);
  assert.deepEqual(keys, fields.filter((field) => field in body), `fields out of SPEC order: ${where()}`);
  for (const field of fields) {
    if (!OPTIONAL_FIELDS.has(field)) assert.ok(field in body, `field ${field} missing: ${where()}`);
    else if (field in body) assert.ok(typeof body[field] === 'string' && body[field] !== '', `empty ${field} not left out: ${where()}`);
  }
}

/** SPEC §1: uri fields are absolute URLs; this one names `path` and nothing else. */
function assertUri(uri: unknown, path: string, where: () => string, publicUrl: string | undefined): void {
  assert.equal(typeof uri, 'string', where());
  let url: URL;
  try {
    url = new URL(uri as string);
  } catch {
    assert.fail(`uri is not an absolute URL: ${where()}`);
  }
  assert.ok(url.protocol === 'http:' || url.protocol === 'https:', `uri is not http(s): ${where()}`);
  assert.ok(url.pathname.endsWith(path) && url.search === '' && url.hash === '', `uri does not name ${path} alone: ${where()}`);
  if (publicUrl !== undefined) assert.equal(uri, `${publicUrl}${path}`, `uri not built on PUBLIC_URL: ${where()}`);
}

function checkCredential(body: Record<string, unknown>, created: boolean, where: () => string, publicUrl?: string): void {
  checkFieldOrder(body, CREDENTIAL_FIELDS, where);
  const id = String(body.id);
  assert.match(id, new RegExp(`^cr_${KSUID}$`), where());
  assertUri(body.uri, `/credentials/${id}`, where, publicUrl);
  assert.match(String(body.created_at), TIMESTAMP, where());
  if (created) assert.match(String(body.token), new RegExp(`^${id.slice(3)}_[0-9A-Za-z]{21}$`), `bad token in a 201: ${where()}`);
  else assert.equal(body.token, null, `a token outside the 201: ${where()}`);
  assert.ok(Array.isArray(body.acl) && body.acl.every((rule) => typeof rule === 'string'), where());
  assert.match(String(body.owner_id), new RegExp(`^(usr|bot)_${KSUID}$`), where());
}

function checkEdge(body: Record<string, unknown>, where: () => string, publicUrl?: string): void {
  checkFieldOrder(body, EDGE_FIELDS, where);
  const id = String(body.id);
  assert.match(id, new RegExp(`^edgtls_${KSUID}$`), where());
  assertUri(body.uri, `/edges/tls/${id}`, where, publicUrl);
  assert.match(String(body.created_at), TIMESTAMP, where());
  assert.ok(Array.isArray(body.hostports) && body.hostports.length <= 10, where());
  for (const module of ['backend', 'ip_restriction', 'mutual_tls', 'policy']) {
    assert.equal(body[module], null, `${module} is not null: ${where()}`);
  }
  if (body.tls_termination !== null) checkTermination(body.tls_termination as Record<string, unknown>, where);
  if (body.traffic_policy !== null) checkModule(body.traffic_policy as Record<string, unknown>, where);
}

function checkTermination(body: Record<string, unknown>, where: () => string): void {
  assert.equal(typeof body.enabled, 'boolean', where());
  assert.ok(body.terminate_at === 'edge' || body.terminate_at === 'upstream', where());
  assert.ok(body.min_version === undefined || ['1.0', '1.1', '1.2', '1.3'].includes(String(body.min_version)), where());
}

function checkModule(body: Record<string, unknown>, where: () => string): void {
  assert.deepEqual(Object.keys(body), ['enabled', 'value'], where());
  assert.equal(typeof body.enabled, 'boolean', where());
  assert.equal(typeof body.value, 'string', where());
}

function checkList(
  body: Record<string, unknown>,
  key: string,
  checkItem: (item: Record<string, unknown>) => void,
  where: () => string,
  publicUrl: string | undefined,
): void {
  assert.deepEqual(Object.keys(body), [key, 'uri', 'next_page_uri'], where());
  const items = body[key] as Record<string, unknown>[];
  assert.ok(Array.isArray(items) && items.length <= 100, where());
  items.forEach(checkItem);
  for (let i = 1; i < items.length; i++) assert.ok(String(items[i - 1]!.id) > String(items[i]!.id), `list not newest first: ${where()}`);
  assertUri(body.uri, key === 'credentials' ? '/credentials' : '/edges/tls', where, publicUrl);
  if (publicUrl !== undefined && body.next_page_uri !== null) assert.ok(String(body.next_page_uri).startsWith(`${publicUrl}/`), where());
  if (body.next_page_uri !== null) {
    assert.ok(items.length > 0, `next_page_uri on an empty page: ${where()}`);
    assert.ok(String(body.next_page_uri).includes(`before_id=${String(items.at(-1)!.id)}`), where());
  }
}
