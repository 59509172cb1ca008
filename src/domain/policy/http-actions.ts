/**
 * Configuration of the HTTP actions (HTTP-POLICY.md §2), checked when the policy is written:
 * shape problems are ERR_NGROK_2203, missing or out-of-range values ERR_NGROK_2204, bad
 * interpolations 2224. Field names and defaults follow the reference's page of each action.
 */
import type { MapNode, TreeNode } from './parse.js';
import { field, isNull, rejectUnknownKeys, scalarOrKind } from './structure.js';
import { CODES, fail, kindOf, quoted, utf8Bytes } from './problem.js';
import { checkInterpolations } from './expressions.js';
import { HTTP_ACTION_LIMITS as LIMITS } from './limits.js';
import { compileRe2 } from './regex.js';
import { isWebhookProvider, WEBHOOK_PROVIDERS } from './webhooks.js';
import { validateJwtValidation } from '../identity/jwt-config.js';
import type { CompressionAlgorithm, HttpAction, PolicyValue } from './types.js';

/** RFC 9110 §5.1: a header name is a token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers burrow frames itself: a policy setting them would desynchronise the answer. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'host', 'upgrade', 'te', 'trailer', 'keep-alive']);
const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
/** What Node's zlib streams (zstd is not in Node 20's), in the default order of preference. */
const COMPRESSIONS: readonly CompressionAlgorithm[] = ['br', 'gzip', 'deflate'];

export interface Ctx {
  /** `Rule 1, action 2`: the label interpolation messages start with. */
  label: string;
  /** `Rule 1, action 2, line 7`. */
  where: string;
  type: string;
}

export function validateHttpAction(type: string, label: string, where: string, config: TreeNode | null): HttpAction {
  const ctx: Ctx = { label, where, type };
  const map = config === null ? undefined : configMap(ctx, config);
  switch (type) {
    case 'add-headers': {
      only(ctx, map, ['headers']);
      return { type, config: { headers: headerMap(ctx, map, 'headers', true) } };
    }
    case 'remove-headers': {
      only(ctx, map, ['headers']);
      const headers = stringList(ctx, map, 'headers', true, LIMITS.headers);
      headers.forEach((name, i) => headerName(ctx, `config.headers, entry ${i + 1}`, name));
      return { type, config: { headers: headers.map((h) => h.toLowerCase()) } };
    }
    case 'custom-response': {
      only(ctx, map, ['status_code', 'body', 'headers', 'content']);
      const body = optionalString(ctx, map, 'body') ?? optionalString(ctx, map, 'content') ?? '';
      if (utf8Bytes(body) > LIMITS.bodyBytes) fail(CODES.configInvalid, `${ctx.where}: config.body is ${utf8Bytes(body)} bytes; it may be at most ${LIMITS.bodyBytes}.`);
      interpolations(ctx, 'config.body', body);
      return { type, config: { status_code: statusCode(ctx, map, 'status_code', undefined, 200, 599), body, headers: headerMap(ctx, map, 'headers', false) } };
    }
    case 'redirect': {
      only(ctx, map, ['from', 'to', 'status_code', 'headers']);
      const status = statusCode(ctx, map, 'status_code', 302, 300, 399);
      if (!REDIRECT_STATUSES.includes(status)) fail(CODES.configInvalid, `${ctx.where}: config.status_code ${status} is not a redirect; use one of ${REDIRECT_STATUSES.join(', ')}.`);
      return { type, config: { ...fromTo(ctx, map), status_code: status, headers: headerMap(ctx, map, 'headers', false) } };
    }
    case 'url-rewrite': {
      only(ctx, map, ['from', 'to']);
      return { type, config: fromTo(ctx, map) };
    }
    case 'set-vars':
      return { type, config: { vars: setVars(ctx, map) } };
    case 'circuit-breaker': {
      only(ctx, map, ['error_threshold', 'volume_threshold', 'window_duration', 'tripped_duration', 'num_buckets']);
      const threshold = value(map, 'error_threshold');
      let error_threshold = 0.5;
      if (threshold) {
        if (threshold.kind !== 'scalar' || typeof threshold.value !== 'number') fail(CODES.configMalformed, `${ctx.where}: config.error_threshold must be a number.`);
        if (!(threshold.value > 0 && threshold.value <= 1)) fail(CODES.configInvalid, `${ctx.where}: config.error_threshold is ${threshold.value}; it must be above 0 and at most 1.`);
        error_threshold = threshold.value;
      }
      const seconds = (key: string): number => {
        const text = optionalString(ctx, map, key) ?? '10s';
        const parsed = durationSeconds(text);
        if (parsed === undefined || parsed < 1 || parsed > 3600) fail(CODES.configInvalid, `${ctx.where}: config.${key} ${quoted(text)} must be a duration from 1s to 1h.`);
        return parsed;
      };
      return {
        type,
        config: {
          error_threshold,
          volume_threshold: integer(ctx, map, 'volume_threshold', 10, 1, 1_000_000),
          window_duration: seconds('window_duration'),
          tripped_duration: seconds('tripped_duration'),
          num_buckets: integer(ctx, map, 'num_buckets', 10, 1, 128),
        },
      };
    }
    case 'compress-response': {
      only(ctx, map, ['algorithms']);
      const given = stringList(ctx, map, 'algorithms', false, COMPRESSIONS.length);
      for (const [i, name] of given.entries()) {
        if (!(COMPRESSIONS as readonly string[]).includes(name)) {
          fail(CODES.configInvalid, `${ctx.where}: config.algorithms, entry ${i + 1}, ${quoted(name)}, is not served; use ${COMPRESSIONS.join(', ')}.`);
        }
      }
      if (new Set(given).size !== given.length) fail(CODES.configInvalid, `${ctx.where}: config.algorithms names an algorithm twice.`);
      return { type, config: { algorithms: given.length > 0 ? (given as CompressionAlgorithm[]) : [...COMPRESSIONS] } };
    }
    case 'basic-auth':
      return { type, config: basicAuth(ctx, map) };
    case 'rate-limit':
      return { type, config: rateLimit(ctx, map) };
    case 'verify-webhook':
      return { type, config: verifyWebhookConfig(ctx, map) };
    case 'jwt-validation':
      return { type, config: validateJwtValidation(where, config) };
    case 'deny': {
      // In HTTP phases deny answers, 403 unless status_code says otherwise.
      only(ctx, map, ['status_code']);
      return { type: 'deny', config: { status_code: statusCode(ctx, map, 'status_code', 403, 100, 599) } };
    }
    default:
      throw new Error(`internal: no validator for ${type}`);
  }
}

function configMap(ctx: Ctx, config: TreeNode): MapNode {
  if (config.kind !== 'map') fail(CODES.configMalformed, `${ctx.where}: config must be a mapping, but it is ${kindOf(scalarOrKind(config))}.`);
  return config;
}

export function only(ctx: Ctx, map: MapNode | undefined, keys: readonly string[]): void {
  if (!map) return;
  rejectUnknownKeys(
    map,
    keys,
    (key) => `${ctx.where}: config has the unknown key ${quoted(key, 32)}; ${ctx.type} accepts ${keys.filter((k) => k !== 'content').join(', ')}.`,
    CODES.configMalformed,
  );
}

export function value(map: MapNode | undefined, key: string): TreeNode | undefined {
  const entry = map && field(map, key);
  return entry && !isNull(entry.value) ? entry.value : undefined;
}

export function required(ctx: Ctx, key: string, example: string): never {
  fail(CODES.configInvalid, `${ctx.where}: ${ctx.type} needs config.${key}, ${example}.`);
}

function interpolations(ctx: Ctx, path: string, text: string): void {
  if (text.includes('${')) checkInterpolations(ctx.label, path, text);
}

export function optionalString(ctx: Ctx, map: MapNode | undefined, key: string): string | undefined {
  const node = value(map, key);
  if (!node) return undefined;
  if (node.kind !== 'scalar' || typeof node.value !== 'string') {
    fail(CODES.configMalformed, `${ctx.where}: config.${key} must be a string, but it is ${kindOf(scalarOrKind(node))}.`);
  }
  return node.value;
}

export function optionalBool(ctx: Ctx, map: MapNode | undefined, key: string, fallback: boolean): boolean {
  const node = value(map, key);
  if (!node) return fallback;
  if (node.kind !== 'scalar' || typeof node.value !== 'boolean') {
    fail(CODES.configMalformed, `${ctx.where}: config.${key} must be true or false, but it is ${kindOf(scalarOrKind(node))}.`);
  }
  return node.value;
}

function integer(ctx: Ctx, map: MapNode | undefined, key: string, fallback: number | undefined, min: number, max: number): number {
  const node = value(map, key);
  if (!node) {
    if (fallback === undefined) required(ctx, key, `an integer from ${min} to ${max}`);
    return fallback;
  }
  if (node.kind !== 'scalar' || typeof node.value !== 'number' || !Number.isInteger(node.value)) {
    fail(CODES.configMalformed, `${ctx.where}: config.${key} must be an integer, but it is ${kindOf(scalarOrKind(node))}.`);
  }
  if (node.value < min || node.value > max) fail(CODES.configInvalid, `${ctx.where}: config.${key} is ${node.value}; it must be from ${min} to ${max}.`);
  return node.value;
}

function statusCode(ctx: Ctx, map: MapNode | undefined, key: string, fallback: number | undefined, min: number, max: number): number {
  return integer(ctx, map, key, fallback, min, max);
}

export function stringList(ctx: Ctx, map: MapNode | undefined, key: string, needed: boolean, max: number): string[] {
  const node = value(map, key);
  if (!node) {
    if (needed) required(ctx, key, 'a non-empty list of strings');
    return [];
  }
  if (node.kind !== 'seq') fail(CODES.configMalformed, `${ctx.where}: config.${key} must be a list of strings, but it is ${kindOf(scalarOrKind(node))}.`);
  if (needed && node.items.length === 0) required(ctx, key, 'a non-empty list of strings');
  if (node.items.length > max) fail(CODES.configInvalid, `${ctx.where}: config.${key} has ${node.items.length} entries; at most ${max} are allowed.`);
  return node.items.map((item, i) => {
    if (item.kind !== 'scalar' || typeof item.value !== 'string') {
      fail(CODES.configMalformed, `${ctx.where}: config.${key}, entry ${i + 1} must be a string, but it is ${kindOf(scalarOrKind(item))}.`);
    }
    return item.value;
  });
}

function headerName(ctx: Ctx, path: string, name: string): void {
  if (!TOKEN.test(name)) fail(CODES.configInvalid, `${ctx.where}: ${path}, ${quoted(name)}, is not a valid header name (letters, digits and !#$%&'*+-.^_\`|~ only).`);
  if (FRAMING.has(name.toLowerCase())) fail(CODES.configInvalid, `${ctx.where}: ${path}, ${quoted(name)}, frames the message and is set by burrow; a policy cannot change it.`);
}

/** A mapping of header names to values (values may interpolate). */
function headerMap(ctx: Ctx, map: MapNode | undefined, key: string, needed: boolean): Array<[string, string]> {
  const node = value(map, key);
  if (!node) {
    if (needed) required(ctx, key, 'a mapping of header names to values such as {x-example: "yes"}');
    return [];
  }
  if (node.kind !== 'map') fail(CODES.configMalformed, `${ctx.where}: config.${key} must be a mapping of header names to values, but it is ${kindOf(scalarOrKind(node))}.`);
  if (needed && node.entries.length === 0) required(ctx, key, 'a mapping of header names to values such as {x-example: "yes"}');
  if (node.entries.length > LIMITS.headers) fail(CODES.configInvalid, `${ctx.where}: config.${key} has ${node.entries.length} headers; at most ${LIMITS.headers} are allowed.`);
  return node.entries.map((entry) => {
    const path = `config.${key}.${entry.key.slice(0, 32)}`;
    headerName(ctx, `config.${key}`, entry.key);
    const raw = entry.value;
    if (raw.kind !== 'scalar' || raw.value === null || typeof raw.value === 'object') {
      fail(CODES.configMalformed, `${ctx.where}: ${path} must be a string, but it is ${kindOf(scalarOrKind(raw))}.`);
    }
    const text = String(raw.value);
    if (utf8Bytes(text) > LIMITS.headerValueBytes) fail(CODES.configInvalid, `${ctx.where}: ${path} is longer than ${LIMITS.headerValueBytes} bytes.`);
    if (/[\r\n\0]/.test(text)) fail(CODES.configInvalid, `${ctx.where}: ${path} contains a line break or NUL, which a header value cannot hold.`);
    interpolations(ctx, path, text);
    return [entry.key, text];
  });
}

function fromTo(ctx: Ctx, map: MapNode | undefined): { from: string | null; to: string } {
  const to = optionalString(ctx, map, 'to');
  if (to === undefined || to === '') required(ctx, 'to', 'the URL or path to go to, for example "https://example.com/$1"');
  interpolations(ctx, 'config.to', to);
  const from = optionalString(ctx, map, 'from') ?? null;
  if (from !== null) {
    if (from.includes('${')) fail(CODES.configInvalid, `${ctx.where}: config.from is a regular expression and cannot interpolate.`);
    const compiled = compileRe2(from);
    if (!compiled.ok) fail(CODES.configInvalid, `${ctx.where}: config.from, ${quoted(from)}, is not a valid RE2 regular expression (${compiled.reason}).`);
  }
  return { from, to };
}

function setVars(ctx: Ctx, map: MapNode | undefined): Array<[string, PolicyValue]> {
  only(ctx, map, ['vars']);
  const node = value(map, 'vars');
  if (!node || node.kind !== 'seq' || node.items.length === 0) {
    if (node && node.kind !== 'seq') fail(CODES.configMalformed, `${ctx.where}: config.vars must be a list of mappings, but it is ${kindOf(scalarOrKind(node))}.`);
    required(ctx, 'vars', 'a list of mappings such as [{stage: beta}]');
  }
  const out: Array<[string, PolicyValue]> = [];
  for (const [i, item] of node.items.entries()) {
    if (item.kind !== 'map') fail(CODES.configMalformed, `${ctx.where}: config.vars, entry ${i + 1} must be a mapping of names to values, but it is ${kindOf(scalarOrKind(item))}.`);
    for (const entry of item.entries) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(entry.key)) fail(CODES.configInvalid, `${ctx.where}: config.vars, entry ${i + 1}: ${quoted(entry.key)} is not a valid variable name (letters, digits and _).`);
      if (entry.value.kind !== 'scalar') fail(CODES.configMalformed, `${ctx.where}: config.vars.${entry.key} must be a string, number or boolean.`);
      if (typeof entry.value.value === 'string') interpolations(ctx, `config.vars.${entry.key}`, entry.value.value);
      out.push([entry.key, entry.value.value]);
    }
  }
  if (out.length > LIMITS.vars) fail(CODES.configInvalid, `${ctx.where}: config.vars sets ${out.length} variables; at most ${LIMITS.vars} are allowed.`);
  return out;
}

function basicAuth(ctx: Ctx, map: MapNode | undefined): Extract<HttpAction, { type: 'basic-auth' }>['config'] {
  only(ctx, map, ['credentials', 'realm', 'enforce']);
  const credentials = stringList(ctx, map, 'credentials', true, LIMITS.credentials);
  const parsed = credentials.map((text, i) => {
    const colon = text.indexOf(':');
    // Never quote a credential: it holds a password.
    if (colon <= 0) fail(CODES.configInvalid, `${ctx.where}: config.credentials, entry ${i + 1} must be "username:password".`);
    const password = text.slice(colon + 1);
    const chars = [...password].length;
    if (chars < LIMITS.passwordMinChars || chars > LIMITS.passwordMaxChars) {
      fail(CODES.configInvalid, `${ctx.where}: config.credentials, entry ${i + 1}: the password has ${chars} characters; it must have ${LIMITS.passwordMinChars} to ${LIMITS.passwordMaxChars}.`);
    }
    return { username: text.slice(0, colon), password };
  });
  const realm = optionalString(ctx, map, 'realm') ?? 'ngrok';
  if (/["\\\r\n]/.test(realm)) fail(CODES.configInvalid, `${ctx.where}: config.realm cannot hold quotes, backslashes or line breaks.`);
  return { credentials: parsed, realm, enforce: optionalBool(ctx, map, 'enforce', true) };
}

function rateLimit(ctx: Ctx, map: MapNode | undefined): Extract<HttpAction, { type: 'rate-limit' }>['config'] {
  only(ctx, map, ['name', 'algorithm', 'capacity', 'rate', 'bucket_key']);
  const name = optionalString(ctx, map, 'name') ?? '';
  const algorithm = optionalString(ctx, map, 'algorithm');
  if (algorithm === undefined) required(ctx, 'algorithm', '"sliding_window"');
  if (algorithm !== 'sliding_window') fail(CODES.configInvalid, `${ctx.where}: config.algorithm ${quoted(algorithm)} is not served; use "sliding_window".`);
  const capacity = integer(ctx, map, 'capacity', undefined, 1, LIMITS.capacityMax);
  const rate = optionalString(ctx, map, 'rate');
  if (rate === undefined) required(ctx, 'rate', 'a duration such as "60s"');
  const seconds = durationSeconds(rate);
  if (seconds === undefined) fail(CODES.configInvalid, `${ctx.where}: config.rate ${quoted(rate)} is not a duration such as "60s", "5m" or "1h".`);
  if (seconds < LIMITS.rateMinSeconds || seconds > LIMITS.rateMaxSeconds) {
    fail(CODES.configInvalid, `${ctx.where}: config.rate is ${seconds} seconds; it must be from ${LIMITS.rateMinSeconds} second to ${LIMITS.rateMaxSeconds / 3600} hours.`);
  }
  const keys = stringList(ctx, map, 'bucket_key', false, LIMITS.bucketKeys);
  keys.forEach((key, i) => interpolations(ctx, `config.bucket_key, entry ${i + 1}`, key));
  return { name, algorithm, capacity, rate, rateSeconds: seconds, bucket_key: keys };
}

/** Go's duration syntax as the reference writes rates ("60s", "1m30s", "1h"); seconds, or undefined. */
export function durationSeconds(text: string): number | undefined {
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(text.trim());
  if (!match || text.trim() === '') return undefined;
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
}

/** https://ngrok.com/docs/traffic-policy/actions/verify-webhook: provider and secret required, enforce default true. */
function verifyWebhookConfig(ctx: Ctx, map: MapNode | undefined): Extract<HttpAction, { type: 'verify-webhook' }>['config'] {
  only(ctx, map, ['provider', 'secret', 'enforce']);
  const provider = optionalString(ctx, map, 'provider');
  if (provider === undefined || provider === '') required(ctx, 'provider', `one of ${WEBHOOK_PROVIDERS.join(', ')}`);
  if (!isWebhookProvider(provider)) {
    fail(CODES.configInvalid, `${ctx.where}: config.provider ${quoted(provider, 40)} is not a provider burrow can verify; it verifies ${WEBHOOK_PROVIDERS.join(', ')}.`);
  }
  // Never quote the secret: messages and logs must not hold it.
  const secret = optionalString(ctx, map, 'secret');
  if (secret === undefined || secret === '') required(ctx, 'secret', `the signing secret ${provider} gave you`);
  if (utf8Bytes(secret) > LIMITS.headerValueBytes) fail(CODES.configInvalid, `${ctx.where}: config.secret is longer than ${LIMITS.headerValueBytes} bytes.`);
  interpolations(ctx, 'config.secret', secret);
  return { provider, secret, enforce: optionalBool(ctx, map, 'enforce', true) };
}
