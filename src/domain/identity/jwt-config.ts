/**
 * The `jwt-validation` action's configuration (IDENTITY.md §3), checked when the policy is
 * written, with the reference's codes (ERR_NGROK_7169–7192); shape problems are the engine's
 * ERR_NGROK_2203. Nothing here reaches a key provider: a bind is accepted without it.
 */
import type { MapNode, TreeNode } from '../policy/parse.js';
import { field, isNull, rejectUnknownKeys, scalarOrKind } from '../policy/structure.js';
import { CODES, fail, kindOf, quoted, utf8Bytes } from '../policy/problem.js';

export const JWT_CODES = {
  tokenType: 'ERR_NGROK_7169',
  tokenMethod: 'ERR_NGROK_7170',
  config: 'ERR_NGROK_7171',
  noIssuer: 'ERR_NGROK_7172',
  issuer: 'ERR_NGROK_7173',
  noAudience: 'ERR_NGROK_7174',
  audience: 'ERR_NGROK_7175',
  noAlgorithm: 'ERR_NGROK_7176',
  algorithm: 'ERR_NGROK_7177',
  noToken: 'ERR_NGROK_7178',
  /** At run time: a token presented but not valid. */
  tokenInvalid: 'ERR_NGROK_7179',
  tokenName: 'ERR_NGROK_7180',
  tokenPrefix: 'ERR_NGROK_7181',
  noIdentification: 'ERR_NGROK_7182',
  identification: 'ERR_NGROK_7183',
  noSource: 'ERR_NGROK_7184',
  jku: 'ERR_NGROK_7185',
  /** At run time: a JWKS URL that did not serve a key set. */
  jkuUnserved: 'ERR_NGROK_7186',
  issuerTwice: 'ERR_NGROK_7187',
  audienceTwice: 'ERR_NGROK_7188',
  tokenTwice: 'ERR_NGROK_7189',
  algorithmTwice: 'ERR_NGROK_7190',
  claimTwice: 'ERR_NGROK_7191',
  jkuTwice: 'ERR_NGROK_7192',
} as const;

/** Limits of one action (docs/POLICY.md "jwt-validation"). */
export const JWT_LIMITS = {
  issuers: 20,
  audiences: 20,
  tokens: 10,
  jkus: 10,
  /** An issuer, audience or JWKS URL, in UTF-8 bytes. */
  valueBytes: 2048,
  nameBytes: 256,
  prefixBytes: 64,
} as const;

export const TOKEN_TYPES = ['id_token', 'access_token', 'at+jwt', 'it+jwt', 'plain', 'jwt'] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

/**
 * Asymmetric algorithms only: keys come from published key sets, so an HMAC secret could only be
 * a public key, the key-confusion attack; `none` is never a signature.
 */
export const JWS_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

export interface JwtTokenSource {
  type: TokenType;
  method: 'header' | 'body';
  /** As written; matched without regard to case. */
  name: string;
  prefix: string;
}

export interface JwtValidationConfig {
  issuers: string[];
  /** Empty: the `aud` claim is not checked (the reference's audience is optional). */
  audiences: string[];
  tokens: JwtTokenSource[];
  algorithms: string[];
  jkus: string[];
}

/** RFC 9110 §5.1: a header name is a token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

type Code = (typeof JWT_CODES)[keyof typeof JWT_CODES];

class Reader {
  constructor(readonly where: string) {}

  map(node: TreeNode, path: string, keys: readonly string[]): MapNode {
    if (node.kind !== 'map') fail(CODES.configMalformed, `${this.where}: ${path} must be a mapping, but it is ${kindOf(scalarOrKind(node))}.`);
    rejectUnknownKeys(node, keys, (key) => `${this.where}: ${path} has the unknown key ${quoted(key, 32)}; it accepts ${keys.join(', ')}.`, CODES.configMalformed);
    return node;
  }

  value(map: MapNode | undefined, key: string): TreeNode | undefined {
    const entry = map && field(map, key);
    return entry && !isNull(entry.value) ? entry.value : undefined;
  }

  list(node: TreeNode | undefined, path: string): TreeNode[] {
    if (!node) return [];
    if (node.kind !== 'seq') fail(CODES.configMalformed, `${this.where}: ${path} must be a list, but it is ${kindOf(scalarOrKind(node))}.`);
    return node.items;
  }

  /** `keys` and `sources` are objects in the reference's example and lists in its field table: both are read. */
  maps(node: TreeNode | undefined, path: string, keys: readonly string[]): MapNode[] {
    if (!node) return [];
    const items = node.kind === 'seq' ? node.items : [node];
    return items.map((item, i) => this.map(item, node.kind === 'seq' ? `${path}, entry ${i + 1}` : path, keys));
  }

  string(node: TreeNode | undefined, path: string): string | undefined {
    if (!node) return undefined;
    if (node.kind !== 'scalar' || typeof node.value !== 'string') fail(CODES.configMalformed, `${this.where}: ${path} must be a string, but it is ${kindOf(scalarOrKind(node))}.`);
    if (node.value.includes('${')) fail(JWT_CODES.config, `${this.where}: the JWT Validation configuration is invalid: ${path} cannot interpolate; write the value itself.`);
    return node.value;
  }

  /** Strings of a list, each checked by `check`, none twice (compared by `key`). */
  distinct(items: string[], path: string, twice: Code, noun: string, key: (s: string) => string = (s) => s): void {
    const seen = new Set<string>();
    for (const item of items) {
      if (seen.has(key(item))) fail(twice, `${this.where}: the JWT Validation ${noun} ${quoted(item)} must be unique. Make sure to include it only once in ${path}.`);
      seen.add(key(item));
    }
  }

  bounded(count: number, max: number, path: string): void {
    if (count > max) fail(JWT_CODES.config, `${this.where}: the JWT Validation configuration is invalid: ${path} has ${count} entries; at most ${max} are allowed.`);
  }
}

export function validateJwtValidation(where: string, config: TreeNode | null): JwtValidationConfig {
  const r = new Reader(where);
  if (!config) fail(JWT_CODES.config, `${where}: the JWT Validation configuration is invalid: jwt-validation needs config with issuer, http and jws.`);
  const root = r.map(config, 'config', ['issuer', 'audience', 'http', 'jws']);
  return { issuers: issuers(r, root), audiences: audiences(r, root), tokens: tokens(r, root), ...jws(r, root) };
}

/** `{allow_list: [{value}]}` → the values, each a non-empty string of bounded length. */
function allowList(r: Reader, node: TreeNode | undefined, path: string, empty: Code, bad: Code): string[] {
  const map = node ? r.map(node, path, ['allow_list']) : undefined;
  const items = r.list(r.value(map, 'allow_list'), `${path}.allow_list`);
  if (items.length === 0) fail(empty, `${r.where}: the JWT Validation configuration must have at least one ${path.slice('config.'.length)} in the allow list (${path}.allow_list: [{value: ...}]).`);
  return items.map((item, i) => {
    const at = `${path}.allow_list, entry ${i + 1}`;
    const text = r.string(r.value(r.map(item, at, ['value']), 'value'), `${at}.value`) ?? '';
    if (text === '' || utf8Bytes(text) > JWT_LIMITS.valueBytes) fail(bad, `${r.where}: ${at}.value must be a non-empty string of at most ${JWT_LIMITS.valueBytes} bytes.`);
    return text;
  });
}

function issuers(r: Reader, root: MapNode): string[] {
  const list = allowList(r, r.value(root, 'issuer'), 'config.issuer', JWT_CODES.noIssuer, JWT_CODES.issuer);
  r.bounded(list.length, JWT_LIMITS.issuers, 'config.issuer.allow_list');
  for (const issuer of list) {
    if (!isUrl(issuer, false)) fail(JWT_CODES.issuer, `${r.where}: the JWT Validation issuer is invalid: ${quoted(issuer)} is not a valid URL.`);
  }
  r.distinct(list, 'the issuer allow list', JWT_CODES.issuerTwice, 'issuer');
  return list;
}

function audiences(r: Reader, root: MapNode): string[] {
  const node = r.value(root, 'audience');
  if (!node) return [];
  const list = allowList(r, node, 'config.audience', JWT_CODES.noAudience, JWT_CODES.audience);
  r.bounded(list.length, JWT_LIMITS.audiences, 'config.audience.allow_list');
  r.distinct(list, 'the audience allow list', JWT_CODES.audienceTwice, 'audience');
  return list;
}

function tokens(r: Reader, root: MapNode): JwtTokenSource[] {
  const http = r.value(root, 'http');
  const map = http ? r.map(http, 'config.http', ['tokens']) : undefined;
  const items = r.list(r.value(map, 'tokens'), 'config.http.tokens');
  if (items.length === 0) fail(JWT_CODES.noToken, `${r.where}: the JWT Validation configuration must have at least one token configuration (config.http.tokens).`);
  r.bounded(items.length, JWT_LIMITS.tokens, 'config.http.tokens');
  const out = items.map((item, i): JwtTokenSource => {
    const at = `config.http.tokens, entry ${i + 1}`;
    const token = r.map(item, at, ['type', 'method', 'name', 'prefix']);
    const type = r.string(r.value(token, 'type'), `${at}.type`) ?? '';
    if (!(TOKEN_TYPES as readonly string[]).includes(type)) fail(JWT_CODES.tokenType, `${r.where}: ${at}: the ${quoted(type)} token type is invalid. Valid values are ${TOKEN_TYPES.map((t) => `'${t}'`).join(', ')}.`);
    const method = r.string(r.value(token, 'method'), `${at}.method`) ?? '';
    if (method !== 'header' && method !== 'body') fail(JWT_CODES.tokenMethod, `${r.where}: ${at}: the ${quoted(method)} token method is invalid. Valid values are 'header' and 'body'.`);
    const name = r.string(r.value(token, 'name'), `${at}.name`) ?? '';
    const nameOk = name !== '' && utf8Bytes(name) <= JWT_LIMITS.nameBytes && (method === 'body' ? !/[\0\r\n]/.test(name) : HEADER_NAME.test(name));
    if (!nameOk) fail(JWT_CODES.tokenName, `${r.where}: ${at}: the JWT Validation http token name ${quoted(name)} is invalid; it must be ${method === 'header' ? 'a header name' : 'a body field name'} of 1 to ${JWT_LIMITS.nameBytes} bytes.`);
    const prefix = r.string(r.value(token, 'prefix'), `${at}.prefix`) ?? '';
    if (utf8Bytes(prefix) > JWT_LIMITS.prefixBytes || /[\0\r\n]/.test(prefix)) fail(JWT_CODES.tokenPrefix, `${r.where}: ${at}: the JWT Validation http token prefix ${quoted(prefix)} is invalid; it may hold at most ${JWT_LIMITS.prefixBytes} bytes and no line breaks.`);
    return { type: type as TokenType, method, name, prefix };
  });
  const key = (t: JwtTokenSource) => `${t.method} ${t.name.toLowerCase()}`;
  const seen = new Set<string>();
  for (const t of out) {
    if (seen.has(key(t))) fail(JWT_CODES.tokenTwice, `${r.where}: the JWT Validation http token identified by the method: ${t.method} and name: ${quoted(t.name)} must be unique. Make sure to include it only once in the token list.`);
    seen.add(key(t));
  }
  return out;
}

function jws(r: Reader, root: MapNode): { algorithms: string[]; jkus: string[] } {
  const node = r.value(root, 'jws');
  if (!node) fail(JWT_CODES.noAlgorithm, `${r.where}: the JWT Validation configuration must have at least one allowed algorithm (config.jws.allowed_algorithms).`);
  const map = r.map(node, 'config.jws', ['allowed_algorithms', 'keys']);
  const algorithms = r.list(r.value(map, 'allowed_algorithms'), 'config.jws.allowed_algorithms').map((item, i) => r.string(item, `config.jws.allowed_algorithms, entry ${i + 1}`) ?? '');
  if (algorithms.length === 0) fail(JWT_CODES.noAlgorithm, `${r.where}: the JWT Validation configuration must have at least one allowed algorithm (config.jws.allowed_algorithms).`);
  for (const algorithm of algorithms) {
    if ((JWS_ALGORITHMS as readonly string[]).includes(algorithm)) continue;
    const why = algorithm.toLowerCase() === 'none'
      ? '"none" is not a signature and is never accepted'
      : /^HS(256|384|512)$/.test(algorithm)
        ? 'HMAC algorithms need a shared secret, and keys here are published ones'
        : `use ${JWS_ALGORITHMS.join(', ')}`;
    fail(JWT_CODES.algorithm, `${r.where}: the ${quoted(algorithm, 16)} algorithm is invalid: ${why}.`);
  }
  r.distinct(algorithms, 'the allowed algorithms list', JWT_CODES.algorithmTwice, 'signing key algorithm');
  return { algorithms, jkus: jkus(r, map) };
}

function jkus(r: Reader, jwsMap: MapNode): string[] {
  const keys = r.maps(r.value(jwsMap, 'keys'), 'config.jws.keys', ['identification', 'sources']);
  const out: string[] = [];
  for (const key of keys) {
    for (const id of r.maps(r.value(key, 'identification'), 'config.jws.keys.identification', ['token_claims'])) {
      const claims = r.list(r.value(id, 'token_claims'), 'config.jws.keys.identification.token_claims').map((c, i) => r.string(c, `config.jws.keys.identification.token_claims, entry ${i + 1}`) ?? '');
      if (claims.length === 0) fail(JWT_CODES.noIdentification, `${r.where}: the JWT Validation signing key must have a way to be identified such as the 'kid' token claim.`);
      for (const claim of claims) if (claim !== 'kid') fail(JWT_CODES.identification, `${r.where}: the JWT Validation signing key must have a valid identification mechanism such as the 'kid' token claim; ${quoted(claim, 32)} is not one.`);
      r.distinct(claims, 'the token claim list', JWT_CODES.claimTwice, 'signing key identification token claim');
    }
    for (const source of r.maps(r.value(key, 'sources'), 'config.jws.keys.sources', ['additional_jkus'])) {
      r.list(r.value(source, 'additional_jkus'), 'config.jws.keys.sources.additional_jkus').forEach((item, i) => out.push(r.string(item, `config.jws.keys.sources.additional_jkus, entry ${i + 1}`) ?? ''));
    }
  }
  if (out.length === 0) fail(JWT_CODES.noSource, `${r.where}: the JWT Validation signing key must have at least one source (config.jws.keys.sources.additional_jkus: [a JWKS URL]).`);
  r.bounded(out.length, JWT_LIMITS.jkus, 'config.jws.keys.sources.additional_jkus');
  for (const url of out) {
    if (!isUrl(url, true) || utf8Bytes(url) > JWT_LIMITS.valueBytes) fail(JWT_CODES.jku, `${r.where}: the JWT Validation signing key source has an invalid additional jku: ${quoted(url)} is not a valid http or https URL.`);
  }
  r.distinct(out, 'the additional jku list', JWT_CODES.jkuTwice, 'signing key source additional jku');
  return out;
}

/** An absolute URL; JWKS URLs must be fetchable (http or https, a host). */
function isUrl(text: string, fetchable: boolean): boolean {
  if (/\s/.test(text)) return false;
  try {
    const url = new URL(text);
    return fetchable ? (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '' && url.username === '' && url.password === '' : url.protocol.length > 1;
  } catch {
    return false;
  }
}
