/**
 * The values of the on_http_request and on_http_response variables (variables.ts) for one
 * request, in the representation cel-js evaluates (int → bigint, timestamp → Date, maps as Map so
 * that any header name stays data). `req` is rebuilt after an action changed the request, so
 * later rules see the headers and URL as they will reach the agent.
 */
import { fillActivation, newActivation, type Activation, type PolicyConnection } from './activation.js';
import type { IpAddress } from './cidr.js';
import { checkCel, type CompiledCel } from './environment.js';
import { PHASES, type PhaseName } from './phases.js';
import type { PolicyValue } from './types.js';

/** A request as the data plane read it; `headers` are raw lines (name, value, name, value …). */
export interface PolicyHttpRequest {
  readonly method: string;
  /** The request target as received: origin-form (`/a?b`) or absolute-form. */
  readonly target: string;
  /** `1.1` or `1.0`. */
  readonly version: string;
  readonly scheme: 'http' | 'https';
  readonly headers: readonly string[];
  /** When its head was read (`req.ts.header_received`). */
  readonly receivedAt: number;
  /** The whole body, read only when the phase verifies webhooks (bounded: WEBHOOK_MAX_BODY_BYTES). */
  readonly body?: Buffer;
}

/** The agent's answer (or an action's), as the response phase sees it. */
export interface PolicyHttpResponse {
  readonly status: number;
  readonly headers: readonly string[];
}

type Headers = Map<string, string[]>;

/** Raw header lines → lower-case name → values, in order. */
export function headerMap(raw: readonly string[]): Headers {
  const map: Headers = new Map();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const list = map.get(name);
    if (list) list.push(raw[i + 1]!);
    else map.set(name, [raw[i + 1]!]);
  }
  return map;
}

function first(headers: Headers, name: string): string {
  return headers.get(name)?.[0] ?? '';
}

function contentLength(headers: Headers, answer = false): bigint {
  const value = first(headers, 'content-length');
  // -1: a body of unknown length (chunked, or an answer without Content-Length: its framing was
  // the agent's and is gone); 0: a request without a body.
  if (value === '') return answer || headers.has('transfer-encoding') ? -1n : 0n;
  return /^\d{1,15}$/.test(value) ? BigInt(value) : -1n;
}

function tokens(headers: Headers, name: string): string[] {
  return (headers.get(name) ?? []).flatMap((v) => v.split(',')).map((t) => t.trim().toLowerCase()).filter((t) => t !== '');
}

function mediaType(headers: Headers): string {
  return first(headers, 'content-type').split(';')[0]!.trim().toLowerCase();
}

function cookies(headers: Headers): Map<string, Array<Map<string, string>>> {
  const out = new Map<string, Array<Map<string, string>>>();
  for (const line of headers.get('cookie') ?? []) {
    for (const pair of line.split(';')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      const cookie = new Map([['name', name], ['value', value]]);
      const list = out.get(name);
      if (list) list.push(cookie);
      else out.set(name, [cookie]);
    }
  }
  return out;
}

/** Parsed URLs by scheme, host and target: a keep-alive client asks for the same few again and again. */
const URL_CACHE_SIZE = 256;
/** Longer keys are parsed every time rather than kept (the cache stays small). */
const URL_CACHE_KEY_MAX = 1024;
const urlCache = new Map<string, Record<string, unknown>>();

/**
 * The parts of a request's URL (`req.url.*`), from its target and Host. The object may be shared
 * between requests (cached): nothing writes to it, and CEL cannot.
 */
export function requestUrl(target: string, host: string, scheme: string): Record<string, unknown> {
  const key = `${scheme}\n${host}\n${target}`;
  if (key.length > URL_CACHE_KEY_MAX) return parseRequestUrl(target, host, scheme);
  let parts = urlCache.get(key);
  if (parts === undefined) {
    parts = parseRequestUrl(target, host, scheme);
    if (urlCache.size >= URL_CACHE_SIZE) urlCache.delete(urlCache.keys().next().value!);
    urlCache.set(key, parts);
  }
  return parts;
}

function parseRequestUrl(target: string, host: string, scheme: string): Record<string, unknown> {
  let url: URL | undefined;
  try {
    url = new URL(/^https?:\/\//i.test(target) ? target : `${scheme}://${host || 'invalid'}${target.startsWith('/') ? target : `/${target}`}`);
  } catch {
    url = undefined;
  }
  const rawPath = url?.pathname ?? target.split('?')[0]!;
  let path = rawPath;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    // A bad escape stays as written (the reference's path is decoded where it can be).
  }
  const params = new Map<string, string[]>();
  for (const [key, value] of url?.searchParams ?? []) {
    const list = params.get(key);
    if (list) list.push(value);
    else params.set(key, [value]);
  }
  const port = url?.port ? BigInt(url.port) : 0n;
  return {
    authority: url?.host ?? host,
    host: url?.hostname ?? '',
    path,
    port,
    query: url?.search.slice(1) ?? '',
    query_params: params,
    raw: url?.href ?? target,
    raw_path: rawPath,
    scheme: url?.protocol.slice(0, -1) ?? scheme,
  };
}

/**
 * `req.*` and `res.*` are computed field by field on first read (cel-js reads a variable's fields
 * through property access, and keeps what it read for the rest of the evaluation): most policies
 * read one or two fields, and `req` is made again after every action that edits the request. The
 * getters live on a shared prototype, so making one allocates one small object; its constructor
 * is still Object, so cel-js takes it for the plain object it types.
 */
interface LazyMessage {
  /** The raw header lines, and their map once a field needed it. */
  lines: readonly string[];
  map: Headers | undefined;
  /** An answer: no Content-Length means a length unknown rather than no body. */
  answer: boolean;
}

interface LazyRequest extends LazyMessage {
  request: PolicyHttpRequest;
  target: string;
}

interface LazyResponse extends LazyMessage {
  status: number;
}

/** The header map of a lazy `req` or `res` (`self` is the getter's `this`). */
function headersOf(self: unknown): Headers {
  const message = self as LazyMessage;
  return (message.map ??= headerMap(message.lines));
}

/** The fields `req` and `res` share, all read from the headers. */
const MESSAGE_FIELDS = {
  get content_encoding(): string[] {
    return tokens(headersOf(this), 'content-encoding');
  },
  get content_length(): bigint {
    return contentLength(headersOf(this), (this as unknown as LazyMessage).answer);
  },
  get content_type(): string {
    return mediaType(headersOf(this));
  },
  get headers(): Headers {
    return headersOf(this);
  },
  get location(): string {
    return first(headersOf(this), 'location');
  },
  // Request trailers arrive after the body, which streams past the policy: none are seen; nor are an answer's.
  get trailers(): Headers {
    return new Map();
  },
};

const REQUEST_FIELDS = {
  __proto__: MESSAGE_FIELDS,
  get cookies(): Map<string, Array<Map<string, string>>> {
    return cookies(headersOf(this));
  },
  get host(): string {
    return first(headersOf(this), 'host');
  },
  get method(): string {
    return (this as unknown as LazyRequest).request.method;
  },
  get ts(): { header_received: Date } {
    return { header_received: new Date((this as unknown as LazyRequest).request.receivedAt) };
  },
  get url(): Record<string, unknown> {
    const self = this as unknown as LazyRequest;
    return requestUrl(self.target, first(headersOf(self), 'host'), self.request.scheme);
  },
  get user_agent(): string {
    return first(headersOf(this), 'user-agent');
  },
  get version(): string {
    return `HTTP/${(this as unknown as LazyRequest).request.version}`;
  },
};

const RESPONSE_FIELDS = {
  __proto__: MESSAGE_FIELDS,
  get status_code(): bigint {
    return BigInt((this as unknown as LazyResponse).status);
  },
};

export function requestVariables(request: PolicyHttpRequest, headers: readonly string[], target: string): Record<string, unknown> {
  const self = Object.create(REQUEST_FIELDS) as LazyRequest;
  self.lines = headers;
  self.map = undefined;
  self.answer = false;
  self.request = request;
  self.target = target;
  return self as unknown as Record<string, unknown>;
}

export function responseVariables(response: PolicyHttpResponse): Record<string, unknown> {
  const self = Object.create(RESPONSE_FIELDS) as LazyResponse;
  self.lines = response.headers;
  self.map = undefined;
  self.answer = true;
  self.status = response.status;
  return self as unknown as Record<string, unknown>;
}

/** `actions.ngrok.*` of the HTTP phases, all present and empty until an action runs. */
export function emptyHttpResults(): Record<string, Record<string, unknown>> {
  const error = () => ({ code: '', message: '' });
  return {
    log: { metadata: {} as { [key: string]: PolicyValue } },
    restrict_ips: { action: '', matched_cidr: '', error: error() },
    add_headers: { headers_added: new Map<string, string>() },
    remove_headers: { headers_removed: [] as string[] },
    basic_auth: { authorized: false, credentials: { presented: false, username: '' }, error: error() },
    rate_limit: { bucket_key: '', limited: false, error: error() },
    redirect: { url: '' },
    url_rewrite: { url: '' },
    custom_response: { status_code: 0n },
    compress: { already_compressed: false, negotiated_algorithm: '' },
    verify_webhook: { verified: false, provider: '', error: error() },
    jwt_validation: { tokens: [] as unknown[], error: error() },
    oauth: emptyLoginResults('current_provider_session_id', 'userinfo_refreshed'),
    oidc: { ...emptyLoginResults('current_session_id', 'userinfo_refreshed'), user_info_refreshed: false, identity_token: '' },
  };
}

function emptyLoginResults(sessionField: string, refreshedField: string): Record<string, unknown> {
  const identity = { id: '', email: '', name: '', provider_user_id: '', [sessionField]: '' };
  return { error: { code: '', message: '' }, identity, access_token: '', refresh_token: '', expires_at: '', session_timed_out: false, session_max_duration_reached: false, [refreshedField]: false };
}

/** One activation refilled per evaluation: evaluation is synchronous, so no two use it at once. */
const shared = newActivation();

/** conn, endpoint and time, as the on_tcp_connect activation holds them, and the parsed client address. */
export function connectionVariables(connection: PolicyConnection): { base: Activation; client: IpAddress | null } {
  const client = fillActivation(shared, connection);
  return { base: shared, client };
}

/** The variables whose values cel-js converts to its own typed form on every read (objects). */
export type TypedVariable = 'conn' | 'endpoint' | 'time' | 'req' | 'res';

const typers: { [P in PhaseName]?: { [V in TypedVariable]?: CompiledCel } } = {};

/**
 * Evaluates to `name` in cel-js's typed form (the expression `name` itself, compiled in `phase`'s
 * environment: each environment types with its own classes). cel-js converts a plain object
 * variable anew on each evaluation; converted once per request and handed back in the
 * activation, every expression takes it as it is (activation.ts's TypedActivation does the same).
 */
export function typedVariable(phase: PhaseName, name: TypedVariable): CompiledCel {
  const ofPhase = (typers[phase] ??= {});
  let typer = ofPhase[name];
  if (typer === undefined) {
    const check = checkCel(name, PHASES[phase]);
    if (!check.ok) throw new Error(`internal: ${name} in ${phase}: ${check.reason}`);
    ofPhase[name] = typer = check.compiled;
  }
  return typer;
}
