import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { AccountService } from '../../src/domain/accounts/service.js';
import type { Principal } from '../../src/domain/accounts/types.js';
import { buildApp } from '../../src/app/build.js';
import type { RateLimiter } from '../../src/domain/rate-limit.js';
import type { SessionControl } from '../../src/domain/live-objects/types.js';
import { createLogger } from '../../src/observability/logger.js';
import { openStore, type Store } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { SqlAccountRepository } from '../../src/storage/repositories/accounts.js';
import { Writable } from 'node:stream';

/**
 * The database tests run on: in-memory SQLite by default; with TEST_DATABASE_URL set, a fresh
 * schema of that PostgreSQL database per test app, so runs and tests never see each other.
 */
export function testDatabaseUrl(): string {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return 'sqlite::memory:';
  const url = new URL(base);
  url.searchParams.set('schema', `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`);
  return url.toString();
}

export interface Caller {
  principal: Principal;
  key: string;
}

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  config: Config;
  accounts: AccountService;
  admin: Caller;
  /** Log lines written while the app ran. */
  logs: string[];
  /** inject() with the admin key and Service-Version unless the options say otherwise. */
  call(options: CallOptions): Promise<LightMyRequestResponse>;
  /** A new user or bot on the admin's account (or a new account), with an API key. */
  newCaller(options?: { kind?: 'user' | 'bot'; admin?: boolean; newAccount?: boolean }): Promise<Caller>;
  close(): Promise<void>;
}

export interface CallOptions extends Omit<InjectOptions, 'body'> {
  method: NonNullable<InjectOptions['method']>;
  url: string;
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  /** The API key to send; null sends no Authorization header. Defaults to the admin key. */
  key?: string | null;
  /** false sends no version header. */
  version?: boolean;
}

export async function createTestApp(
  env: Record<string, string> = {},
  options: { rateLimiter?: RateLimiter; sameDatabaseAs?: TestApp; sessionControl?: SessionControl } = {},
): Promise<TestApp> {
  const shared = options.sameDatabaseAs;
  if (shared) env = { DATABASE_URL: shared.config.databaseUrl, ...env };
  // Rate limiting is off unless a test turns it on: suites make many requests per account.
  const config = loadConfig({}, { DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0', ...env });
  const store = openStore(config.databaseUrl, { poolSize: 4 });
  await migrateToLatest(store);
  const accounts = new AccountService(new SqlAccountRepository(store));
  let admin: Caller;
  let accountId: string;
  if (shared) {
    admin = shared.admin;
    accountId = shared.admin.principal.accountId;
  } else {
    const boot = await accounts.bootstrap();
    if (!boot || !('account' in boot) || !boot.generatedSecret) throw new Error('bootstrap did not run on a fresh database');
    admin = { principal: boot.admin, key: boot.generatedSecret };
    accountId = boot.account.id;
  }

  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const app = await buildApp({
    config,
    store,
    logger: createLogger(config.logLevel, sink),
    ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
    ...(options.sessionControl ? { sessionControl: options.sessionControl } : {}),
  });
  await app.ready();

  const call = (callOptions: CallOptions) => {
    const { key = admin.key, version = true, body, headers = {}, ...rest } = callOptions;
    const finalHeaders: Record<string, string> = {};
    if (key !== null) finalHeaders.authorization = `Bearer ${key}`;
    if (version) finalHeaders['service-version'] = '2';
    let payload: string | Buffer | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
      finalHeaders['content-type'] = 'application/json';
    }
    Object.assign(finalHeaders, headers);
    for (const [name, value] of Object.entries(finalHeaders)) if (value === undefined) delete finalHeaders[name];
    return app.inject({ ...rest, headers: finalHeaders, ...(payload === undefined ? {} : { payload }) });
  };

  const newCaller = async (callerOptions: { kind?: 'user' | 'bot'; admin?: boolean; newAccount?: boolean } = {}) => {
    const ownerAccount = callerOptions.newAccount ? (await accounts.createAccount('other')).id : accountId;
    const principal = await accounts.createPrincipal(ownerAccount, callerOptions.kind ?? 'bot', 'test', callerOptions.admin ?? false);
    const { secret } = await accounts.createApiKey(principal.id);
    return { principal, key: secret };
  };

  return {
    app,
    store,
    config,
    accounts,
    admin,
    logs,
    call,
    newCaller,
    close: async () => {
      await app.close();
      if (!shared && store.dialect === 'postgres' && store.schema) await dropSchema(store, store.schema);
      await store.close();
    },
  };
}

async function dropSchema(store: Store, schema: string): Promise<void> {
  const { sql } = await import('kysely');
  await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
}

/** The parsed JSON body of a response. */
export function json<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  return JSON.parse(response.body) as T;
}
