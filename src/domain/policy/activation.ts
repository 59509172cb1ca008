/**
 * The values of the on_tcp_connect variables for one connection, in the representation cel-js
 * evaluates (int → bigint, timestamp → Date). The shape follows VARIABLES in environment.ts, the
 * table the type checker uses; test/domain/policy/activation.test.ts walks both so that a name
 * that validates always has a value here.
 */
import { checkCel, VARIABLES, type CompiledCel } from './environment.js';
import { ipv4Text, parseIpCached, type IpAddress } from './cidr.js';
import type { PolicyValue } from './types.js';
import { formatTimestamp } from '../ids.js';
import { NO_TLS, type TlsVariables } from './tls-variables.js';

/** What the data plane knows about a connection when it is accepted. */
export interface PolicyConnection {
  /** The peer address as the socket reports it; `::ffff:a.b.c.d` is read as a.b.c.d. */
  clientIp: string;
  clientPort: number;
  /** The local address the connection reached. */
  serverIp: string;
  serverPort: number;
  /** `conn.server_region`: the REGION setting. */
  region: string;
  /** When the connection was accepted (`conn.ts.start`). */
  startedAt: Date | number;
  /** The endpoint or TLS edge hostport reached (`endpoint.*`); missing fields read as "" or 0. */
  endpoint: PolicyEndpoint;
  /** The evaluation time (`time.now`, RFC 3339 in UTC); the engine never reads the clock. */
  now: Date | number;
  /** `conn.tls.*`: what the data plane knows of the connection's TLS; absent: no TLS (all empty). */
  tls?: TlsVariables | undefined;
}

export interface PolicyEndpoint {
  /** e.g. `tcp://1.tcp.example.com:12345` or `tls://app.example.com:443`. */
  url?: string;
  /** host:port. */
  addr?: string;
  host?: string;
  /** The endpoint or edge id. */
  id?: string;
  /** `tcp`, `tls`, `http` or `https`. */
  protocol?: string;
  port?: number;
}

/** `actions.ngrok.restrict_ips` as later rules read it. */
export interface RestrictIpsVariables {
  action: string;
  matched_cidr: string;
  error: { code: string; message: string };
}

/** The activation handed to every compiled expression; mutable only through the functions below. */
export interface Activation {
  [name: string]: unknown;
  conn: {
    client_ip: string;
    client_port: bigint;
    server_ip: string;
    server_port: bigint;
    server_region: string;
    ts: { start: Date };
    geo: Record<string, string>;
    tls: TlsVariables;
  };
  endpoint: { addr: string; host: string; id: string; url: string; protocol: string; port: bigint };
  time: { now: string };
  /** set-vars's variables (one Map per connection, made on the first set). */
  vars: Map<string, unknown>;
  actions: {
    ngrok: {
      log: { metadata: { [key: string]: PolicyValue } };
      restrict_ips: RestrictIpsVariables;
    };
  };
}

/** Every conn.geo field, empty: burrow has no GeoIP database (TUNNELS.md §5). */
const EMPTY_GEO: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.keys(VARIABLES.conn.geo).map((name) => [name, ''])),
);

/** No variables set (shared, never written: set-vars makes the connection its own Map). */
export const NO_VARS: Map<string, unknown> = new Map();

const EMPTY_METADATA: { [key: string]: PolicyValue } = Object.freeze({}) as { [key: string]: PolicyValue };

export function emptyActionResults(): Activation['actions'] {
  return {
    ngrok: {
      log: { metadata: EMPTY_METADATA },
      restrict_ips: { action: '', matched_cidr: '', error: { code: '', message: '' } },
    },
  };
}

/** An activation with every variable present; `fill` then sets one connection's values. */
export function newActivation(): Activation {
  return {
    conn: {
      client_ip: '',
      client_port: 0n,
      server_ip: '',
      server_port: 0n,
      server_region: '',
      ts: { start: new Date(0) },
      geo: EMPTY_GEO,
      tls: NO_TLS,
    },
    endpoint: { addr: '', host: '', id: '', url: '', protocol: '', port: 0n },
    time: { now: '' },
    vars: NO_VARS,
    actions: emptyActionResults(),
  };
}

/**
 * Writes one connection into `activation` (reused between evaluations: evaluation is synchronous,
 * so no two connections ever share it at once) and returns the parsed client address (null when
 * `clientIp` is not an IP address).
 */
export function fillActivation(activation: Activation, connection: PolicyConnection): IpAddress | null {
  const client = parseIpCached(connection.clientIp);
  const conn = activation.conn;
  conn.client_ip = (client && ipv4Text(client)) ?? connection.clientIp;
  conn.client_port = toInt(connection.clientPort);
  const server = parseIpCached(connection.serverIp);
  conn.server_ip = (server && ipv4Text(server)) ?? connection.serverIp;
  conn.server_port = toInt(connection.serverPort);
  conn.server_region = connection.region;
  conn.ts.start = toDate(connection.startedAt);
  conn.tls = connection.tls ?? NO_TLS;
  const endpoint = connection.endpoint;
  const target = activation.endpoint;
  target.addr = endpoint.addr ?? '';
  target.host = endpoint.host ?? '';
  target.id = endpoint.id ?? '';
  target.url = endpoint.url ?? '';
  target.protocol = endpoint.protocol ?? '';
  target.port = toInt(endpoint.port ?? 0);
  // RFC 3339 as every timestamp of the API (SPEC §1: UTC, whole seconds, `Z`), Go's time.RFC3339.
  activation.time.now = formatTimestamp(Math.floor(toDate(connection.now).getTime() / 1000));
  activation.vars = NO_VARS;
  const results = activation.actions.ngrok;
  results.log.metadata = EMPTY_METADATA;
  const restrict = results.restrict_ips;
  restrict.action = '';
  restrict.matched_cidr = '';
  restrict.error.code = '';
  restrict.error.message = '';
  return client;
}

function toInt(value: number): bigint {
  return Number.isSafeInteger(value) ? BigInt(value) : 0n;
}

function toDate(value: Date | number): Date {
  const date = typeof value === 'number' ? new Date(value) : value;
  // An invalid date would make toISOString throw; the epoch is an honest "unknown".
  return Number.isNaN(date.getTime()) ? new Date(0) : date;
}

/**
 * cel-js reads an object-typed variable (conn, endpoint, …) by first converting the plain object
 * into its own typed map, and it does so again on every evaluation, because the conversion is
 * cached per evaluation only. With dozens of expressions per connection that conversion was most
 * of the cost. Evaluating the variables themselves once returns the converted values; handed back
 * in the activation, every later expression takes them as they are. (Were cel-js to stop
 * converting, the values would simply be the plain objects: still correct.)
 */
const TOP_LEVEL = ['conn', 'endpoint', 'time', 'actions'] as const;
let typers: Record<(typeof TOP_LEVEL)[number], CompiledCel> | undefined;

function compiled(text: string): CompiledCel {
  const check = checkCel(text);
  if (!check.ok) throw new Error(`internal: ${text}: ${check.reason}`);
  return check.compiled;
}

function getTypers(): Record<(typeof TOP_LEVEL)[number], CompiledCel> {
  return (typers ??= Object.fromEntries(TOP_LEVEL.map((name) => [name, compiled(name)])) as Record<(typeof TOP_LEVEL)[number], CompiledCel>);
}

/**
 * The activation expressions are evaluated with: `raw`'s variables in cel-js's representation,
 * each converted on first read (most policies read only conn, and never actions).
 */
export class TypedActivation {
  #conn: unknown;
  #endpoint: unknown;
  #time: unknown;
  #actions: unknown;

  constructor(readonly raw: Activation) {}

  get conn(): unknown {
    return (this.#conn ??= getTypers().conn(this.raw));
  }

  get endpoint(): unknown {
    return (this.#endpoint ??= getTypers().endpoint(this.raw));
  }

  get time(): unknown {
    return (this.#time ??= getTypers().time(this.raw));
  }

  get vars(): unknown {
    return this.raw.vars;
  }

  get actions(): unknown {
    return (this.#actions ??= getTypers().actions(this.raw));
  }

  /** After fillActivation wrote a new connection into `raw`. */
  reset(): void {
    this.#conn = this.#endpoint = this.#time = this.#actions = undefined;
  }

  /** After an action changed `raw.actions`. */
  actionsChanged(): void {
    this.#actions = undefined;
  }
}
