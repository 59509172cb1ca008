import { isIP } from 'node:net';
import { isWellFormedSecret } from './domain/secrets.js';
import { bindHostnameProblem } from './domain/acl.js';
import { readFileSync } from 'node:fs';
import { parseOAuthProviders, type OAuthProvider } from './domain/identity/oauth-providers.js';
import { MOVE_WINDOW_MS } from './domain/tunnels/moving-names.js';

/**
 * The only reader of the environment. `loadConfig` validates every variable once, at start,
 * and returns a frozen object; a bad value stops the start with a message naming the variable.
 * Command-line flags (the CLI's) are passed in as overrides, never written into the environment.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** `undefined` → SQLite file under ./data; `sqlite::memory:`; `sqlite:<path>`; `postgres://…` */
  readonly databaseUrl: string;
  readonly publicUrl: string | undefined;
  readonly trustProxy: boolean | string;
  readonly logLevel: LogLevel;
  readonly bootstrapApiKey: string | undefined;
  readonly rateLimitPerMinute: number;
  readonly maxPolicyRules: number;
  readonly dbPoolSize: number;
  readonly dbStatementTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly shutdownGraceMs: number;
  /** The data plane (TUNNELS.md §1). */
  readonly tunnels: TunnelConfig;
  /** The web console at /console/ (CONSOLE.md): CONSOLE=off turns it off. */
  readonly console: ConsoleConfig;
  /** OAUTH_PROVIDERS_FILE's providers (IDENTITY.md §2), read and checked at start; empty when unset. */
  readonly oauthProviders: readonly OAuthProvider[];
}

export interface ConsoleConfig {
  readonly enabled: boolean;
  /** A console session unused this long is signed out. */
  readonly idleTimeoutMs: number;
  /** Captured requests kept per endpoint (INSPECTION_KEEP), the oldest dropped. */
  readonly inspectionKeep: number;
}

export interface TunnelConfig {
  /** 0 = no data plane on this instance (API only). */
  readonly agentPort: number;
  /** Where the agent port listens: HOST. */
  readonly agentHost: string;
  readonly agentTlsCert: string | undefined;
  readonly agentTlsKey: string | undefined;
  readonly agentHostname: string | undefined;
  readonly tlsDir: string;
  readonly edgeHost: string;
  /** 0 = off. */
  readonly edgeHttpPort: number;
  readonly edgeTlsPort: number;
  readonly edgeTcpPorts: readonly { readonly first: number; readonly last: number }[];
  readonly edgeDomain: string;
  readonly edgePublicHost: string;
  /** Ports written in URLs (a load balancer may map other ports onto the listeners). */
  readonly edgePublicHttpPort: number;
  readonly edgePublicTlsPort: number;
  readonly edgeTlsCert: string | undefined;
  readonly edgeTlsKey: string | undefined;
  /** Public TCP (and TLS passthrough) connections idle (no byte either way) this long are closed; 0 = never. */
  readonly edgeTcpIdleTimeoutMs: number;
  /** Public TCP connections one client address (IPv6: /64) may hold to one busy endpoint; 0 = no limit. */
  readonly edgeTcpConnectionsPerClient: number;
  /** More edge certificates, chosen by SNI: `<stem>.crt` + `<stem>.key` pairs (CERTIFICATES.md §2). */
  readonly edgeTlsCertsDir: string | undefined;
  /** 0 = no limit. */
  readonly maxSessionsPerAccount: number;
  readonly maxEndpointsPerSession: number;
  readonly region: string;
  /** Custom names and fixed TCP addresses need a reservation first (CERTIFICATES.md §0). */
  readonly requireReservedNames: boolean;
  /** ACME (CERTIFICATES.md §1); undefined when ACME_DIRECTORY_URL is unset. */
  readonly acme: AcmeConfig | undefined;
  /** Edge listeners asked for while AGENT_PORT=0 turns the data plane off: said at start, not opened. */
  readonly ignoredWithoutDataPlane: readonly string[];
  /** Several instances (CLUSTER.md §1). */
  readonly cluster: ClusterConfig;
}

export interface ClusterConfig {
  /** CLUSTER_SECRET, 32 bytes from 64 hex digits: the key of the cluster CA stored in the database. */
  readonly secret: Buffer | undefined;
  /** CLUSTER_ADDR `host:port`: where this instance listens for the others, recorded in the database. */
  readonly addr: string | undefined;
  /** PROXY_PROTOCOL_FROM: the CIDRs whose connections to the public listeners start with a PROXY header. */
  readonly proxyProtocolFrom: readonly string[];
  /**
   * ROUTE_WAIT_WINDOW_MS: how long after a withdrawal (and after the start) an unrouted name still
   * waits for its route (CLUSTER.md §3, domain/tunnels/moving-names.ts).
   */
  readonly routeWaitWindowMs: number;
}

export const ACME_CHALLENGE_TYPES = ['tls-alpn-01', 'http-01'] as const;
export type AcmeChallengeType = (typeof ACME_CHALLENGE_TYPES)[number];

export interface AcmeConfig {
  readonly directoryUrl: string;
  readonly email: string | undefined;
  /** External account binding, for CAs that need one (ZeroSSL, Google). */
  readonly eab: { readonly kid: string; readonly hmacKey: string } | undefined;
  /** Renew this long before expiry; undefined = at two thirds of the lifetime. */
  readonly renewBeforeMs: number | undefined;
  /** ACME_RENEW_INTERVAL: how often stored certificates are checked for renewal (Caddy's renew_interval). */
  readonly renewIntervalMs: number;
  /** ACME_DNS_HOOK: the command run for dns-01 (wildcards). */
  readonly dnsHook: string | undefined;
  /** ACME_CHALLENGES: the types tried, in order of preference. */
  readonly challenges: readonly AcmeChallengeType[];
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_DATABASE_URL = 'sqlite:./data/burrow.db';

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}.`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** Values given on the command line; each wins over its variable and is checked the same way. */
export interface ConfigOverrides {
  /** --database-url, in place of DATABASE_URL. */
  readonly databaseUrl?: string | undefined;
}

/**
 * The configuration from `env` (the process environment unless a test passes its own), with
 * the command line's `overrides` taking precedence.
 */
export function loadConfig(overrides: ConfigOverrides = {}, env: Env = process.env): Config {
  if (overrides.databaseUrl) env = { ...env, DATABASE_URL: overrides.databaseUrl };
  const config: Config = {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: text(env, 'HOST', '127.0.0.1'),
    databaseUrl: databaseUrl(env),
    publicUrl: publicUrl(env),
    trustProxy: trustProxy(env),
    logLevel: logLevel(env),
    bootstrapApiKey: bootstrapKey(env),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 1200, 0, 10_000_000),
    maxPolicyRules: integer(env, 'MAX_POLICY_RULES', 25, 1, 1000),
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 1000),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 5000, 0, 3_600_000),
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 0, 3_600_000),
    headersTimeoutMs: integer(env, 'HEADERS_TIMEOUT_MS', 10_000, 1, 3_600_000),
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 1, 3_600_000),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 3_600_000),
    tunnels: tunnelConfig(env),
    console: consoleConfig(env),
    oauthProviders: readOAuthProviders(env),
  };
  if (config.requestTimeoutMs > 0 && config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError('HEADERS_TIMEOUT_MS', `must not exceed REQUEST_TIMEOUT_MS (${config.requestTimeoutMs})`);
  }
  return Object.freeze(config);
}

/**
 * OAUTH_PROVIDERS_FILE's providers, read and checked (empty when unset): for the configuration,
 * and alone for `burrow policy`, which needs no other variable.
 */
export function readOAuthProviders(env: Env = process.env): OAuthProvider[] {
  const path = present(env, 'OAUTH_PROVIDERS_FILE');
  if (path === undefined) return [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('OAUTH_PROVIDERS_FILE', `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}: ${path})`);
  }
  try {
    return parseOAuthProviders(text);
  } catch (error) {
    throw new ConfigError('OAUTH_PROVIDERS_FILE', `(${path}) ${(error as Error).message}`);
  }
}

function consoleConfig(env: Env): ConsoleConfig {
  const raw = text(env, 'CONSOLE', 'on').toLowerCase();
  if (raw !== 'on' && raw !== 'off') throw new ConfigError('CONSOLE', `must be on or off, got ${JSON.stringify(raw)}`);
  return Object.freeze({ enabled: raw === 'on', idleTimeoutMs: integer(env, 'CONSOLE_IDLE_MINUTES', 30, 1, 10_080) * 60_000, inspectionKeep: integer(env, 'INSPECTION_KEEP', 1000, 1, 100_000) });
}

function present(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function text(env: Env, name: string, fallback: string): string {
  return present(env, name) ?? fallback;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function databaseUrl(env: Env): string {
  const raw = present(env, 'DATABASE_URL');
  if (raw === undefined) return DEFAULT_DATABASE_URL;
  if (raw === 'sqlite::memory:' || /^sqlite:.+/.test(raw)) return raw;
  if (/^postgres(ql)?:\/\/.+/.test(raw)) {
    // pg would say only "Invalid URL", or try to resolve a mangled host name; the message never
    // repeats the URL, which may hold a password.
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL (percent-encode special characters in the user name and password)');
    }
    if (url.hostname === '') throw new ConfigError('DATABASE_URL', 'names no host: write postgres://user@host:port/database');
    const schema = url.searchParams.get('schema');
    // the storage layer checks the same before it sets search_path; here it is a usage error (exit 2)
    if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new ConfigError('DATABASE_URL', 'has a schema parameter that is not a lower-case SQL identifier (letters, digits and _, at most 63)');
    }
    return raw;
  }
  throw new ConfigError(
    'DATABASE_URL',
    'must be sqlite::memory:, sqlite:<file path>, or postgres://user@host:port/database',
  );
}

function publicUrl(env: Env): string | undefined {
  const raw = present(env, 'PUBLIC_URL');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_URL', `must be an absolute http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username) {
    throw new ConfigError('PUBLIC_URL', 'must be an http(s) URL without credentials, query or fragment');
  }
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** `true`/`false`, or a comma-separated list of trusted proxy addresses or CIDRs. */
function trustProxy(env: Env): boolean | string {
  const raw = present(env, 'TRUST_PROXY');
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  const entries = raw.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrCidr(entry));
  if (bad === undefined) return entries.join(',');
  throw new ConfigError('TRUST_PROXY', `must be true, false, or a comma-separated list of proxy IPs/CIDRs; ${JSON.stringify(bad)} is neither an IP address nor a CIDR`);
}

/** 64 hex digits (`openssl rand -hex 32`); the message never repeats the value. */
function clusterSecret(env: Env): Buffer | undefined {
  const raw = present(env, 'CLUSTER_SECRET');
  if (raw === undefined) return undefined;
  if (!/^[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError('CLUSTER_SECRET', `must be 64 hex digits (openssl rand -hex 32), got ${raw.length} characters`);
  return Buffer.from(raw, 'hex');
}

/** `host:port` (`[v6]:port` for IPv6), port 1 to 65535. */
function hostPort(env: Env, variable: string): string | undefined {
  const raw = present(env, variable);
  if (raw === undefined) return undefined;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]\s]+)):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  const hostOk = match?.[1] !== undefined ? isIP(match[1]) === 6 : host !== undefined && (isIP(host) === 4 || /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(host));
  if (!match || !hostOk || port < 1 || port > 65535) throw new ConfigError(variable, `must be host:port (an IPv6 address in brackets), got ${JSON.stringify(raw)}`);
  return raw;
}

/** A comma-separated list of IP addresses or CIDRs; empty for none. */
function cidrs(env: Env, variable: string): string[] {
  const raw = present(env, variable);
  if (raw === undefined) return [];
  const entries = raw.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrCidr(entry));
  if (bad !== undefined) throw new ConfigError(variable, `must be a comma-separated list of IP addresses or CIDRs; ${JSON.stringify(bad)} is neither`);
  return entries;
}

/** An IPv4 or IPv6 address, alone or with a prefix length its family allows (`10.0.0.0/8`, `::1/128`). */
function isAddressOrCidr(entry: string): boolean {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0 || slash === -1) return family !== 0;
  const prefix = entry.slice(slash + 1);
  return /^(0|[1-9][0-9]{0,2})$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function logLevel(env: Env): LogLevel {
  const raw = present(env, 'LOG_LEVEL') ?? 'info';
  if ((LOG_LEVELS as readonly string[]).includes(raw)) return raw as LogLevel;
  throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
}

function bootstrapKey(env: Env): string | undefined {
  const raw = present(env, 'BOOTSTRAP_API_KEY');
  if (raw === undefined) return undefined;
  // Any key of SPEC §2's shape (SPEC §4): its id is `ak_` + its first 27 characters.
  if (!isWellFormedSecret(raw)) {
    throw new ConfigError('BOOTSTRAP_API_KEY', 'must be a well-formed API key: <27 base62 characters>_<20-22 base62 characters>');
  }
  return raw;
}

function tunnelConfig(env: Env): TunnelConfig {
  const host = text(env, 'HOST', '127.0.0.1');
  const edgeHttpPort = integer(env, 'EDGE_HTTP_PORT', 8081, 0, 65535);
  const edgeTlsPort = integer(env, 'EDGE_TLS_PORT', 8443, 0, 65535);
  let config: TunnelConfig = {
    agentPort: integer(env, 'AGENT_PORT', 4443, 0, 65535),
    agentHost: host,
    agentTlsCert: present(env, 'AGENT_TLS_CERT'),
    agentTlsKey: present(env, 'AGENT_TLS_KEY'),
    agentHostname: optionalName(env, 'AGENT_HOSTNAME'),
    tlsDir: text(env, 'TLS_DIR', './data/tls'),
    edgeHost: text(env, 'EDGE_HOST', host),
    edgeHttpPort,
    edgeTlsPort,
    edgeTcpPorts: portRanges(env, 'EDGE_TCP_PORTS', '20000-20099'),
    edgeDomain: name(env, 'EDGE_DOMAIN', 'burrow.localhost'),
    edgePublicHost: name(env, 'EDGE_PUBLIC_HOST', '127.0.0.1'),
    edgePublicHttpPort: integer(env, 'EDGE_PUBLIC_HTTP_PORT', edgeHttpPort || 80, 1, 65535),
    edgePublicTlsPort: integer(env, 'EDGE_PUBLIC_TLS_PORT', edgeTlsPort || 443, 1, 65535),
    edgeTlsCert: present(env, 'EDGE_TLS_CERT'),
    edgeTlsKey: present(env, 'EDGE_TLS_KEY'),
    edgeTcpIdleTimeoutMs: integer(env, 'EDGE_TCP_IDLE_TIMEOUT_MS', 300_000, 0, 86_400_000),
    edgeTcpConnectionsPerClient: integer(env, 'EDGE_TCP_CONNECTIONS_PER_CLIENT', 50, 0, 1_000_000),
    edgeTlsCertsDir: present(env, 'EDGE_TLS_CERTS_DIR'),
    maxSessionsPerAccount: integer(env, 'MAX_SESSIONS_PER_ACCOUNT', 100, 0, 1_000_000),
    maxEndpointsPerSession: integer(env, 'MAX_ENDPOINTS_PER_SESSION', 100, 0, 10_000),
    region: regionName(env),
    requireReservedNames: flag(env, 'REQUIRE_RESERVED_NAMES'),
    acme: acmeConfig(env),
    ignoredWithoutDataPlane: [],
    cluster: Object.freeze({
      secret: clusterSecret(env),
      addr: hostPort(env, 'CLUSTER_ADDR'),
      proxyProtocolFrom: Object.freeze(cidrs(env, 'PROXY_PROTOCOL_FROM')),
      routeWaitWindowMs: integer(env, 'ROUTE_WAIT_WINDOW_MS', MOVE_WINDOW_MS, 0, 600_000),
    }),
  };
  if (config.agentPort === 0) config = { ...config, ignoredWithoutDataPlane: edgeListenersAsked(env) };
  pair(config.agentTlsCert, config.agentTlsKey, 'AGENT_TLS_CERT', 'AGENT_TLS_KEY');
  pair(config.edgeTlsCert, config.edgeTlsKey, 'EDGE_TLS_CERT', 'EDGE_TLS_KEY');
  return Object.freeze(config);
}

function acmeConfig(env: Env): AcmeConfig | undefined {
  const directoryUrl = present(env, 'ACME_DIRECTORY_URL');
  if (directoryUrl === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(directoryUrl);
  } catch {
    throw new ConfigError('ACME_DIRECTORY_URL', `must be an https:// URL, got ${JSON.stringify(directoryUrl)}`);
  }
  if (url.protocol !== 'https:') throw new ConfigError('ACME_DIRECTORY_URL', 'must be an https:// URL (RFC 8555 §6.1)');
  const email = present(env, 'ACME_EMAIL');
  if (email !== undefined && !/^[^@\s:]+@[^@\s:]+\.[^@\s:]+$/.test(email)) throw new ConfigError('ACME_EMAIL', `must be an e-mail address, got ${JSON.stringify(email)}`);
  const kid = present(env, 'ACME_EAB_KID');
  const hmacKey = present(env, 'ACME_EAB_HMAC_KEY');
  if ((kid === undefined) !== (hmacKey === undefined)) {
    throw new ConfigError(kid === undefined ? 'ACME_EAB_KID' : 'ACME_EAB_HMAC_KEY', 'must be set together with ' + (kid === undefined ? 'ACME_EAB_HMAC_KEY' : 'ACME_EAB_KID'));
  }
  if (hmacKey !== undefined && !/^[A-Za-z0-9_-]+=*$/.test(hmacKey)) throw new ConfigError('ACME_EAB_HMAC_KEY', 'must be the base64url key the CA gave');
  const challenges = (present(env, 'ACME_CHALLENGES') ?? ACME_CHALLENGE_TYPES.join(',')).split(',').map((type) => type.trim());
  const unknown = challenges.find((type) => !(ACME_CHALLENGE_TYPES as readonly string[]).includes(type));
  if (unknown !== undefined || challenges.length === 0) throw new ConfigError('ACME_CHALLENGES', `must list ${ACME_CHALLENGE_TYPES.join(' and/or ')}, got ${JSON.stringify(unknown ?? '')}`);
  return {
    directoryUrl,
    email,
    eab: kid !== undefined && hmacKey !== undefined ? { kid, hmacKey } : undefined,
    renewBeforeMs: duration(env, 'ACME_RENEW_BEFORE'),
    renewIntervalMs: renewInterval(env),
    dnsHook: present(env, 'ACME_DNS_HOOK'),
    challenges: challenges as AcmeChallengeType[],
  };
}

/** 1 s to 1 day; a minute unless set. */
function renewInterval(env: Env): number {
  const ms = duration(env, 'ACME_RENEW_INTERVAL') ?? 60_000;
  if (ms < 1000 || ms > 86_400_000) throw new ConfigError('ACME_RENEW_INTERVAL', `must be between 1s and 1d, got ${JSON.stringify(present(env, 'ACME_RENEW_INTERVAL'))}`);
  return ms;
}

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `12h`, `30d`; unset is undefined. */
function duration(env: Env, variable: string): number | undefined {
  const raw = present(env, variable);
  if (raw === undefined) return undefined;
  const match = /^(\d{1,9})([smhd])$/.exec(raw);
  if (!match) throw new ConfigError(variable, `must be a duration such as 90s, 30m, 12h or 30d, got ${JSON.stringify(raw)}`);
  return Number(match[1]) * DURATION_UNITS[match[2]!]!;
}

/** The edge listeners the environment asks for (a port other than 0, any TCP range). */
function edgeListenersAsked(env: Env): string[] {
  const asked = ['EDGE_HTTP_PORT', 'EDGE_TLS_PORT'].filter((name) => {
    const value = present(env, name);
    return value !== undefined && value !== '0';
  });
  if (present(env, 'EDGE_TCP_PORTS') !== undefined) asked.push('EDGE_TCP_PORTS');
  return asked;
}

/** A domain of two labels or more, or an IPv4 address (SPEC 5.3's host), stored lower-case. */
function name(env: Env, variable: string, fallback: string): string {
  const raw = present(env, variable) ?? fallback;
  const problem = bindHostnameProblem(raw);
  if (problem) throw new ConfigError(variable, `must be a domain of two labels or more, or an IPv4 address: ${problem.replace(/\.$/, '')}`);
  return raw.toLowerCase();
}

function optionalName(env: Env, variable: string): string | undefined {
  const raw = present(env, variable);
  if (raw === undefined) return undefined;
  if (/^[0-9a-fA-F:]+$/.test(raw) && raw.includes(':')) return raw; // an IPv6 address
  // DNS labels of 1 to 63 letters, digits or inner hyphens (it goes on a certificate)
  if (raw.length <= 253 && raw.split('.').every((label) => /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label))) return raw.toLowerCase();
  throw new ConfigError(variable, `must be a host name or an IP address, got ${JSON.stringify(raw)}`);
}

/** `true`/`1` or `false`/`0`; unset is false. */
function flag(env: Env, variable: string): boolean {
  const raw = present(env, variable);
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ConfigError(variable, `must be true or false, got ${JSON.stringify(raw)}`);
}

function regionName(env: Env): string {
  const raw = present(env, 'REGION') ?? 'local';
  if (/^[a-z0-9-]{1,32}$/.test(raw)) return raw;
  throw new ConfigError('REGION', `must be 1 to 32 lower-case letters, digits or "-", got ${JSON.stringify(raw)}`);
}

/** `20000-20099`, `20000,20005-20010`, or empty for none. */
function portRanges(env: Env, variable: string, fallback: string): { first: number; last: number }[] {
  const value = env[variable];
  const raw = value === undefined ? fallback : value.trim();
  if (raw === '') return [];
  const ranges: { first: number; last: number }[] = [];
  for (const part of raw.split(',')) {
    const match = /^\s*(\d{1,5})(?:\s*-\s*(\d{1,5}))?\s*$/.exec(part);
    const first = Number(match?.[1]);
    const last = match?.[2] === undefined ? first : Number(match[2]);
    if (!match || first < 1 || last > 65535 || last < first) {
      throw new ConfigError(variable, `must be ports or port ranges such as "20000-20099" or "20000,20005-20010", got ${JSON.stringify(raw)}`);
    }
    ranges.push({ first, last });
  }
  return ranges;
}

function pair(cert: string | undefined, key: string | undefined, certName: string, keyName: string): void {
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError(cert === undefined ? certName : keyName, `must be set together with ${cert === undefined ? keyName : certName}`);
  }
}
