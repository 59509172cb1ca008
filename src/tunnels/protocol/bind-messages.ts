/** Bind (stream type 1): the request, its canonical option view, and the answer that echoes its Opts (AGENT-PROTOCOL.md §5). */
import { BIND_OPTIONS } from '../../domain/tunnels/bind-options.js';
import { type JsonValue, type JsonObject, MessageDecodeError, isJsonObject, findKey, getField, bad, str, bool, int, obj, strArray, requireObject } from './json-fields.js';

export type ProxyProtoVersion = 0 | 1 | 2;

export interface IpRestriction {
  allowCidrs: string[];
  denyCidrs: string[];
}

/** Canonical names of the bind options this layer knows (any key case is accepted): the bind-option table's. */
export const KNOWN_BIND_OPTIONS: readonly string[] = BIND_OPTIONS.map((spec) => spec.name);

/** The options the canonical view exposes as fields; every other set option is in `otherOptions`. */
export const VIEWED_BIND_OPTIONS: ReadonlySet<string> = new Set(BIND_OPTIONS.filter((spec) => spec.service.as === 'field').map((spec) => spec.name));

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
const OPTS_NAMES = new Map(BIND_OPTIONS.filter((spec) => spec.echoed).map((spec) => [spec.name.toLowerCase(), spec.name]));
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
