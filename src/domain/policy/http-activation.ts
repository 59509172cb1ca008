/**
 * The values of the on_http_request and on_http_response variables (variables.ts) for one
 * request, in the representation cel-js evaluates (int → bigint, timestamp → Date, maps as Map so
 * that any header name stays data). `req` is rebuilt after an action changed the request, so
 * later rules see the headers and URL as they will reach the agent.
 */
import { fillActivation, newActivation, type Activation, type PolicyConnection } from './activation.js';
import type { IpAddress } from './cidr.js';
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

/** The parts of a request's URL (`req.url.*`), from its target and Host. */
export function requestUrl(target: string, host: string, scheme: string): Record<string, unknown> {
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

export function requestVariables(request: PolicyHttpRequest, headers: readonly string[], target: string): Record<string, unknown> {
  const map = headerMap(headers);
  const host = first(map, 'host');
  return {
    content_encoding: tokens(map, 'content-encoding'),
    content_length: contentLength(map),
    content_type: mediaType(map),
    cookies: cookies(map),
    headers: map,
    host,
    location: first(map, 'location'),
    method: request.method,
    // Trailers arrive after the body, which streams past the policy: none are seen.
    trailers: new Map(),
    ts: { header_received: new Date(request.receivedAt) },
    url: requestUrl(target, host, request.scheme),
    user_agent: first(map, 'user-agent'),
    version: `HTTP/${request.version}`,
  };
}

export function responseVariables(response: PolicyHttpResponse): Record<string, unknown> {
  const map = headerMap(response.headers);
  return {
    content_encoding: tokens(map, 'content-encoding'),
    content_length: contentLength(map, true),
    content_type: mediaType(map),
    headers: map,
    location: first(map, 'location'),
    status_code: BigInt(response.status),
    trailers: new Map(),
  };
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
    oidc: { ...emptyLoginResults('current_session_id', 'user_info_refreshed'), identity_token: '' },
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
