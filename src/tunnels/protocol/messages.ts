/**
 * The agent protocol's JSON messages (AGENT-PROTOCOL.md §5, §6): decoders that read incoming
 * keys case-insensitively into typed canonical messages, and encoders that write the exact
 * PascalCase names the agents require.
 *
 * Key matching follows Go's encoding/json (which GO agents and the reference server use): an
 * exact match wins, else the last key equal ignoring ASCII case. Absent and `null` fields take
 * their zero value (Go leaves the field untouched on `null`). A present field of the wrong JSON
 * type is a `MessageDecodeError` (Go's Unmarshal fails likewise).
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export class MessageDecodeError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'MessageDecodeError';
  }
}

// ---------------------------------------------------------------------------------------------
// Case-insensitive field access

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The key of `obj` that `name` designates: exact, else the last one equal ignoring case. */
export function findKey(obj: JsonObject, name: string): string | undefined {
  if (Object.prototype.hasOwnProperty.call(obj, name)) return name;
  const lower = name.toLowerCase();
  let found: string | undefined;
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) found = k;
  return found;
}

/** The value of field `name` (any key case), or undefined when absent. */
export function getField(obj: JsonObject, name: string): JsonValue | undefined {
  const k = findKey(obj, name);
  return k === undefined ? undefined : obj[k];
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function bad(path: string, expected: string, v: unknown): MessageDecodeError {
  return new MessageDecodeError(path, `${path}: expected ${expected}, got ${typeName(v)}`);
}

function str(o: JsonObject, name: string, path: string): string {
  const v = getField(o, name);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw bad(`${path}${name}`, 'a string', v);
  return v;
}

function optStr(o: JsonObject, name: string, path: string): string | null {
  const v = getField(o, name);
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw bad(`${path}${name}`, 'a string or null', v);
  return v;
}

function bool(o: JsonObject, name: string, path: string): boolean {
  const v = getField(o, name);
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw bad(`${path}${name}`, 'a boolean', v);
  return v;
}

function optBool(o: JsonObject, name: string, path: string): boolean | null {
  const v = getField(o, name);
  if (v === undefined || v === null) return null;
  if (typeof v !== 'boolean') throw bad(`${path}${name}`, 'a boolean or null', v);
  return v;
}

function int(o: JsonObject, name: string, path: string): number {
  const v = getField(o, name);
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(`${path}${name}`, 'an integer', v);
  return v;
}

function obj(o: JsonObject, name: string, path: string): JsonObject | null {
  const v = getField(o, name);
  if (v === undefined || v === null) return null;
  if (!isJsonObject(v)) throw bad(`${path}${name}`, 'an object', v);
  return v;
}

function strArray(o: JsonObject, name: string, path: string): string[] {
  const v = getField(o, name);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad(`${path}${name}`, 'an array of strings', v);
  return v as string[];
}

function strMap(o: JsonObject, name: string, path: string): Record<string, string> {
  const m = obj(o, name, path);
  if (m === null) return {};
  const entries = Object.entries(m);
  for (const [k, v] of entries) if (typeof v !== 'string') throw bad(`${path}${name}.${k}`, 'a string', v);
  return Object.fromEntries(entries) as Record<string, string>;
}

function requireObject(v: unknown, what: string): JsonObject {
  if (!isJsonObject(v)) throw new MessageDecodeError('', `${what} must be a JSON object, got ${typeName(v)}`);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Auth (type 0)

export interface AuthExtra {
  os: string;
  arch: string;
  /** `Extra.AuthToken` (RS) / `Extra.Authtoken` (GO). Never log it. */
  authToken: string;
  /** The agent's own version (`Extra.Version`). */
  version: string;
  hostname: string;
  userAgent: string;
  metadata: string;
  cookie: string;
  /** Nanoseconds; 0 when not sent. */
  heartbeatInterval: number;
  heartbeatTolerance: number;
  /** null = agent too old (unsupported), "" = supported, other text = unsupported because of it. */
  updateUnsupportedError: string | null;
  stopUnsupportedError: string | null;
  restartUnsupportedError: string | null;
  proxyType: string;
  mutualTls: boolean;
  serviceRun: boolean;
  configVersion: string;
  customInterface: boolean;
  customCas: boolean;
  clientType: string;
}

export interface AuthRequest {
  /** Protocol versions offered, in preference order. */
  versions: string[];
  /** "" for a new session, else the previous session's id. */
  clientId: string;
  extra: AuthExtra;
}

export function decodeAuth(value: unknown): AuthRequest {
  const o = requireObject(value, 'Auth');
  const e = obj(o, 'Extra', '') ?? {};
  const p = 'Extra.';
  return {
    versions: strArray(o, 'Version', ''),
    clientId: str(o, 'ClientId', ''),
    extra: {
      os: str(e, 'OS', p),
      arch: str(e, 'Arch', p),
      authToken: str(e, 'AuthToken', p),
      version: str(e, 'Version', p),
      hostname: str(e, 'Hostname', p),
      userAgent: str(e, 'UserAgent', p),
      metadata: str(e, 'Metadata', p),
      cookie: str(e, 'Cookie', p),
      heartbeatInterval: int(e, 'HeartbeatInterval', p),
      heartbeatTolerance: int(e, 'HeartbeatTolerance', p),
      updateUnsupportedError: optStr(e, 'UpdateUnsupportedError', p),
      stopUnsupportedError: optStr(e, 'StopUnsupportedError', p),
      restartUnsupportedError: optStr(e, 'RestartUnsupportedError', p),
      proxyType: str(e, 'ProxyType', p),
      mutualTls: bool(e, 'MutualTLS', p),
      serviceRun: bool(e, 'ServiceRun', p),
      configVersion: str(e, 'ConfigVersion', p),
      customInterface: bool(e, 'CustomInterface', p),
      customCas: bool(e, 'CustomCAs', p),
      clientType: str(e, 'ClientType', p),
    },
  };
}

export interface AuthResponse {
  /** The session id (`ClientId`). */
  clientId: string;
  extra?: {
    version?: string;
    region?: string;
    cookie?: string;
    accountName?: string;
    /** Seconds. */
    sessionDuration?: number;
    planName?: string;
    banner?: string;
    /** Written only when given (GO parses NextDate as an RFC 3339 time). */
    deprecationWarning?: { nextMin: string; nextDate: Date | null; msg: string };
    /** Written only when given. */
    connectAddresses?: { region: string; serverAddr: string }[];
  };
}

/** `{"Version","ClientId","Extra":{…}}`: RS needs Version and ClientId; GO takes zero values. */
export function encodeAuthResp(version: string, r: AuthResponse): JsonObject {
  const x = r.extra ?? {};
  const extra: JsonObject = {
    Version: x.version ?? '',
    Region: x.region ?? '',
    Cookie: x.cookie ?? '',
    AccountName: x.accountName ?? '',
    SessionDuration: x.sessionDuration ?? 0,
    PlanName: x.planName ?? '',
    Banner: x.banner ?? '',
  };
  if (x.deprecationWarning) {
    const d = x.deprecationWarning;
    extra.DeprecationWarning = {
      NextMin: d.nextMin,
      NextDate: d.nextDate ? d.nextDate.toISOString() : '0001-01-01T00:00:00Z',
      Msg: d.msg,
    };
  }
  if (x.connectAddresses) {
    extra.ConnectAddresses = x.connectAddresses.map((a) => ({ Region: a.region, ServerAddr: a.serverAddr }));
  }
  return { Version: version, ClientId: r.clientId, Extra: extra };
}

// ---------------------------------------------------------------------------------------------
// Bind (type 1)

export type ProxyProtoVersion = 0 | 1 | 2;

export interface IpRestriction {
  allowCidrs: string[];
  denyCidrs: string[];
}

/** Canonical names of the bind options this layer knows (any key case is accepted). */
export const KNOWN_BIND_OPTIONS = [
  'Domain',
  'Hostname',
  'Subdomain',
  'Addr',
  'Auth',
  'HostHeaderRewrite',
  'LocalUrlScheme', // GO: LocalURLScheme (equal ignoring case)
  'ProxyProto',
  'Compression',
  'CircuitBreaker',
  'IPRestriction',
  'BasicAuth',
  'OAuth',
  'OIDC',
  'WebhookVerification',
  'MutualTLSCA',
  'RequestHeaders',
  'ResponseHeaders',
  'WebsocketTCPConverter',
  'UserAgentFilter',
  'TrafficPolicy',
  'MutualTLSAtAgent',
  'MutualTLSAtEdge',
  'TLSTermination',
  'Username', // ssh (GO legacy)
  'Password',
] as const;

/** The options the canonical view exposes as fields; every other set option is in `otherOptions`. */
export const VIEWED_BIND_OPTIONS: ReadonlySet<string> = new Set([
  'Domain',
  'Hostname',
  'Subdomain',
  'Addr',
  'ProxyProto',
  'IPRestriction',
  'TrafficPolicy',
]);

const CANONICAL_OPTION = new Map<string, string>(KNOWN_BIND_OPTIONS.map((n) => [n.toLowerCase(), n]));

/** `"localurlscheme"` → `"LocalUrlScheme"`; unknown keys come back as given. */
export function canonicalOptionName(key: string): string {
  return CANONICAL_OPTION.get(key.toLowerCase()) ?? key;
}

/**
 * Whether an option value counts as set: `undefined`, `null`, `""`, `0`, `false` and `[]` are
 * unset; every object is set, **including `{}`**: RS and GO send presence-only options as an
 * empty object (`Compression: {}`, `WebsocketTCPConverter: {}` mean "on"; `null` means off).
 */
export function isSetOptionValue(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return false;
  if (Array.isArray(v)) return v.length > 0;
  return true;
}

export interface BindOptions {
  hostname: string;
  domain: string;
  subdomain: string;
  /** tcp: `host:port` asked for, or "". */
  addr: string;
  proxyProto: ProxyProtoVersion;
  /** null when absent or when both lists are empty. */
  ipRestriction: IpRestriction | null;
  /** The policy document (JSON or YAML text); an object sent instead is re-serialised as JSON. null when absent or "". */
  trafficPolicy: string | null;
  /** Canonical names of the other options set (see `isSetOptionValue`), in the order received. */
  otherOptions: string[];
}

export interface BindExtra {
  /** Rebind token from a previous BindResp. */
  token: string;
  ipPolicyRef: string;
  metadata: string;
  bindings: string[];
  poolingEnabled: boolean;
  /** GO only. */
  name: string;
  description: string;
}

export interface BindRequest {
  /** "" the first time; the previous tunnel id on rebind. */
  id: string;
  proto: string;
  forwardsTo: string;
  forwardsProto: string;
  /** `Opts` exactly as received ({} when absent), to echo back in the reply. */
  opts: JsonObject;
  options: BindOptions;
  extra: BindExtra;
}

function decodeBindOptions(opts: JsonObject): BindOptions {
  const p = 'Opts.';
  const pp = int(opts, 'ProxyProto', p);
  if (pp !== 0 && pp !== 1 && pp !== 2) {
    throw new MessageDecodeError('Opts.ProxyProto', `Opts.ProxyProto: expected 0, 1 or 2, got ${pp}`);
  }
  let ipRestriction: IpRestriction | null = null;
  const ipr = obj(opts, 'IPRestriction', p);
  if (ipr !== null) {
    const allowCidrs = strArray(ipr, 'allow_cidrs', 'Opts.IPRestriction.');
    const denyCidrs = strArray(ipr, 'deny_cidrs', 'Opts.IPRestriction.');
    if (allowCidrs.length > 0 || denyCidrs.length > 0) ipRestriction = { allowCidrs, denyCidrs };
  }
  let trafficPolicy: string | null = null;
  const tp = getField(opts, 'TrafficPolicy');
  if (typeof tp === 'string') trafficPolicy = tp === '' ? null : tp;
  else if (isJsonObject(tp)) trafficPolicy = JSON.stringify(tp);
  else if (tp !== undefined && tp !== null) throw bad('Opts.TrafficPolicy', 'a string, an object or null', tp);

  const otherOptions: string[] = [];
  const seen = new Set<string>();
  for (const [k, v] of Object.entries(opts)) {
    const name = canonicalOptionName(k);
    if (VIEWED_BIND_OPTIONS.has(name) || seen.has(name)) continue;
    // The value that counts is the one findKey picks (exact, else last case-insensitive match).
    if (isSetOptionValue(getField(opts, name) ?? v)) {
      seen.add(name);
      otherOptions.push(name);
    }
  }
  return {
    hostname: str(opts, 'Hostname', p),
    domain: str(opts, 'Domain', p),
    subdomain: str(opts, 'Subdomain', p),
    addr: str(opts, 'Addr', p),
    proxyProto: pp,
    ipRestriction,
    trafficPolicy,
    otherOptions,
  };
}

export function decodeBind(value: unknown): BindRequest {
  const o = requireObject(value, 'Bind');
  const opts = obj(o, 'Opts', '') ?? {};
  const e = obj(o, 'Extra', '') ?? {};
  const p = 'Extra.';
  return {
    id: str(o, 'Id', ''),
    proto: str(o, 'Proto', ''),
    forwardsTo: str(o, 'ForwardsTo', ''),
    forwardsProto: str(o, 'ForwardsProto', ''),
    opts,
    options: decodeBindOptions(opts),
    extra: {
      token: str(e, 'Token', p),
      ipPolicyRef: str(e, 'IPPolicyRef', p),
      metadata: str(e, 'Metadata', p),
      bindings: strArray(e, 'Bindings', p),
      poolingEnabled: bool(e, 'PoolingEnabled', p),
      name: str(e, 'Name', p),
      description: str(e, 'Description', p),
    },
  };
}

/** Fields RS deserialises without a default, per bind protocol (proto.rs HttpEndpoint etc.). */
const RS_REQUIRED_OPTS: Record<string, Record<string, JsonValue>> = {
  http: { Hostname: '', Auth: '', Subdomain: '', HostHeaderRewrite: false, ProxyProto: 0 },
  https: { Hostname: '', Auth: '', Subdomain: '', HostHeaderRewrite: false, ProxyProto: 0 },
  tcp: { Addr: '', ProxyProto: 0 },
  tls: { Hostname: '', Subdomain: '', ProxyProto: 0, MutualTLSAtAgent: false },
};

function setField(o: JsonObject, name: string, v: JsonValue): void {
  const lower = name.toLowerCase();
  for (const k of Object.keys(o)) if (k !== name && k.toLowerCase() === lower) delete o[k];
  o[name] = v;
}

/** The options AGENT-PROTOCOL.md §5 names, by lower-case key: the reply writes these spellings. */
const OPTS_NAMES = new Map(
  [
    'Domain', 'Hostname', 'Subdomain', 'Auth', 'HostHeaderRewrite', 'LocalUrlScheme', 'ProxyProto', 'Compression',
    'CircuitBreaker', 'IPRestriction', 'BasicAuth', 'OAuth', 'OIDC', 'WebhookVerification', 'MutualTLSCA', 'RequestHeaders',
    'ResponseHeaders', 'WebsocketTCPConverter', 'UserAgentFilter', 'TrafficPolicy', 'Addr', 'MutualTLSAtAgent',
    'MutualTLSAtEdge', 'TLSTermination',
  ].map((name) => [name.toLowerCase(), name]),
);
/** GO's own spelling of a name above, kept as sent. */
const GO_SPELLINGS = new Set(['LocalURLScheme']);

/**
 * The reply's `Opts`: a copy of the request's with every named option in its PascalCase spelling
 * (keys are read in any case, written exactly: §5), `Hostname` / `Addr` set to what was bound,
 * and every field RS requires for `proto` present.
 */
export function echoBindOpts(
  proto: string,
  requestOpts: JsonObject,
  bound: { hostname?: string; addr?: string },
): JsonObject {
  const out = structuredClone(requestOpts);
  for (const key of Object.keys(out)) {
    const name = OPTS_NAMES.get(key.toLowerCase());
    if (name !== undefined && key !== name && !GO_SPELLINGS.has(key) && Object.hasOwn(out, key)) setField(out, name, out[key]!);
  }
  if (bound.hostname !== undefined) setField(out, 'Hostname', bound.hostname);
  if (bound.addr !== undefined) setField(out, 'Addr', bound.addr);
  const required = RS_REQUIRED_OPTS[proto.toLowerCase()] ?? {};
  for (const [k, v] of Object.entries(required)) {
    const key = findKey(out, k);
    if (key === undefined || out[key] === null) setField(out, k, v);
    else if (key !== k) setField(out, k, out[key]!);
  }
  return out;
}

export interface BindResponse {
  /** The tunnel id (the SDK's `listener.id()`). */
  id: string;
  /** The public URL (`listener.url()`). */
  url: string;
  proto: string;
  /** Usually `echoBindOpts(req.proto, req.opts, {hostname|addr})`. */
  opts: JsonObject;
  /** Rebind token the agent sends back after a reconnect. */
  token: string;
}

export function encodeBindResp(r: BindResponse): JsonObject {
  // GO keeps Extra.TunnelID and names the tunnel by it in PatchTunnelState; RS reads only Token.
  return { Id: r.id, URL: r.url, Proto: r.proto, Opts: r.opts, Extra: { Token: r.token, TunnelID: r.id } };
}

// ---------------------------------------------------------------------------------------------
// Unbind (2), StartTunnelWithLabel (7), SrvInfo (8), PatchTunnelState (10)

export interface UnbindRequest {
  id: string;
}

export function decodeUnbind(value: unknown): UnbindRequest {
  const o = requireObject(value, 'Unbind');
  return { id: str(o, 'Id', '') };
}

export function encodeUnbindResp(): JsonObject {
  return {};
}

export interface StartTunnelWithLabelRequest {
  labels: Record<string, string>;
  forwardsTo: string;
  forwardsProto: string;
  metadata: string;
}

export function decodeStartTunnelWithLabel(value: unknown): StartTunnelWithLabelRequest {
  const o = requireObject(value, 'StartTunnelWithLabel');
  return {
    labels: strMap(o, 'Labels', ''),
    forwardsTo: str(o, 'ForwardsTo', ''),
    forwardsProto: str(o, 'ForwardsProto', ''),
    metadata: str(o, 'Metadata', ''),
  };
}

export interface StartTunnelWithLabelResponse {
  id: string;
}

export function encodeStartTunnelWithLabelResp(r: StartTunnelWithLabelResponse): JsonObject {
  return { Id: r.id };
}

export type SrvInfoRequest = Record<string, never>;

export function decodeSrvInfo(value: unknown): SrvInfoRequest {
  requireObject(value, 'SrvInfo');
  return {};
}

export interface SrvInfoResponse {
  region: string;
}

export function encodeSrvInfoResp(r: SrvInfoResponse): JsonObject {
  return { Region: r.region };
}

export interface PatchTunnelStateRequest {
  tunnelId: string;
  /** null = not to be changed. */
  name: string | null;
  description: string | null;
  metadata: string | null;
  poolingEnabled: boolean | null;
  trafficPolicy: string | null;
}

export function decodePatchTunnelState(value: unknown): PatchTunnelStateRequest {
  const o = requireObject(value, 'PatchTunnelState');
  return {
    tunnelId: str(o, 'TunnelId', ''),
    name: optStr(o, 'Name', ''),
    description: optStr(o, 'Description', ''),
    metadata: optStr(o, 'Metadata', ''),
    poolingEnabled: optBool(o, 'PoolingEnabled', ''),
    trafficPolicy: optStr(o, 'TrafficPolicy', ''),
  };
}

export function encodePatchTunnelStateResp(): JsonObject {
  return { Error: '' };
}

// ---------------------------------------------------------------------------------------------
// Error replies: `Error` plus the response's other fields with empty values. RS reads `Error`
// first and fails the call with it (rpc.rs), so it needs nothing else; the other fields are
// there for decoders that read the whole response (GO).

export function errorReply(type: number, text: string, req?: { id?: string; proto?: string; opts?: JsonObject }): JsonObject {
  switch (type) {
    case 0:
      return { Version: '', ClientId: '', Error: text, Extra: {} };
    case 1:
      return {
        Id: req?.id ?? '',
        URL: '',
        Proto: req?.proto ?? '',
        Opts: req?.opts ?? {},
        Error: text,
        Extra: { Token: '' },
      };
    case 7:
      return { Id: '', Error: text };
    case 8:
      return { Region: '', Error: text };
    default:
      return { Error: text };
  }
}

// ---------------------------------------------------------------------------------------------
// Server → agent commands: Restart (4) `{}`, Stop (5) `{}`, Update (6), StopTunnel (9)

export interface UpdateCommand {
  /** "" = the latest. */
  version: string;
  permitMajorVersion: boolean;
}

export function encodeUpdate(c: UpdateCommand): JsonObject {
  return { Version: c.version, PermitMajorVersion: c.permitMajorVersion };
}

export interface StopTunnelCommand {
  /** The tunnel id from BindResp / StartTunnelWithLabelResp. */
  id: string;
  message: string;
  /** `308` or `"ERR_NGROK_308"`; written as the string (RS: Option<String>, GO: string). */
  errorCode: number | string;
}

export function encodeStopTunnel(c: StopTunnelCommand): JsonObject {
  const code = typeof c.errorCode === 'number' ? (c.errorCode > 0 ? `ERR_NGROK_${c.errorCode}` : '') : c.errorCode;
  return { Id: c.id, Message: c.message, ErrorCode: code };
}

/** A command reply (`{}`, `{"Error":""}`, `{"Error":"…"}`): the error text, "" for success. */
export function decodeCommandResp(value: unknown): string {
  const o = requireObject(value, 'command response');
  return str(o, 'Error', '');
}

// ---------------------------------------------------------------------------------------------
// Proxy header (type 3)

/** EdgeType as a string: "1" tcp, "2" tls, "3" https, "" none. */
export type EdgeTypeString = '' | '1' | '2' | '3';
export const EdgeType = { None: '', Tcp: '1', Tls: '2', Https: '3' } as const;

export interface ProxyHeader {
  /** The tunnel id. */
  id: string;
  /** `"ip:port"` of the public client. */
  clientAddr: string;
  /** `"tcp"`, `"tls"`, `"http"`, `"https"`. */
  proto: string;
  edgeType: EdgeTypeString;
  passthroughTls: boolean;
}

/** All five fields, always (RS drops the stream when one is missing). */
export function encodeProxyHeader(h: ProxyHeader): JsonObject {
  return {
    Id: h.id,
    ClientAddr: h.clientAddr,
    Proto: h.proto,
    EdgeType: h.edgeType,
    PassthroughTLS: h.passthroughTls,
  };
}

export function decodeProxyHeader(value: unknown): ProxyHeader {
  const o = requireObject(value, 'ProxyHeader');
  const et = str(o, 'EdgeType', '');
  return {
    id: str(o, 'Id', ''),
    clientAddr: str(o, 'ClientAddr', ''),
    proto: str(o, 'Proto', ''),
    edgeType: et === '1' || et === '2' || et === '3' ? et : '',
    passthroughTls: bool(o, 'PassthroughTLS', ''),
  };
}
