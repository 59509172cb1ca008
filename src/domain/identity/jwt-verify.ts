/**
 * jwt-validation at run time (IDENTITY.md §3): the tokens are found in the request (synchronously,
 * as the policy engine runs), then verified with `jose` against the keys of the configured JWKS
 * URLs (asynchronously, while the engine waits). Token values are never put in a message.
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { JWT_CODES, type JwtTokenSource, type JwtValidationConfig } from './jwt-config.js';
import { JwksCache } from './jwt-keys.js';

/** Leeway on `exp` and `nbf` for clocks a little apart (docs/DECISIONS.md). */
export const CLOCK_SKEW_SECONDS = 30;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const BODY_TYPES = new Set(['application/json', 'application/x-www-form-urlencoded']);

export interface PresentedToken {
  source: JwtTokenSource;
  /** After the prefix; '' when the field held no token after it. */
  value: string;
  /** Set when the field was there but not as the configuration says (wrong prefix). */
  malformed?: string;
}

/** What the engine hands over: the request as the earlier rules left it. */
export interface TokenRequest {
  method: string;
  /** Lower-case names. */
  headers: ReadonlyMap<string, readonly string[]>;
  body: Buffer | undefined;
}

/** Every configured token, or the first one missing (the reference: all must be present). */
export function findTokens(config: JwtValidationConfig, request: TokenRequest): { tokens: PresentedToken[]; missing?: JwtTokenSource } {
  const tokens: PresentedToken[] = [];
  let fields: Map<string, string> | undefined;
  for (const source of config.tokens) {
    let raw: string | undefined;
    if (source.method === 'header') raw = request.headers.get(source.name.toLowerCase())?.[0];
    else raw = (fields ??= bodyFields(request)).get(source.name.toLowerCase());
    if (raw === undefined || raw.trim() === '') return { tokens, missing: source };
    tokens.push(stripPrefix(source, raw.trim()));
  }
  return { tokens };
}

function stripPrefix(source: JwtTokenSource, raw: string): PresentedToken {
  if (source.prefix === '') return { source, value: raw };
  // Schemes are case-insensitive (RFC 9110 §11.1): "bearer x" is "Bearer x".
  if (raw.slice(0, source.prefix.length).toLowerCase() !== source.prefix.toLowerCase()) return { source, value: '', malformed: `it does not start with the prefix ${JSON.stringify(source.prefix)}` };
  return { source, value: raw.slice(source.prefix.length).trim() };
}

/** Top-level fields of a JSON object or a form, by lower-case name; the reference reads a body token only from these, on POST, PUT and PATCH. */
function bodyFields(request: TokenRequest): Map<string, string> {
  const fields = new Map<string, string>();
  const type = (request.headers.get('content-type')?.[0] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!request.body || !BODY_METHODS.has(request.method.toUpperCase()) || !BODY_TYPES.has(type)) return fields;
  const text = request.body.toString('utf8');
  if (type === 'application/json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return fields;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return fields;
    for (const [key, value] of Object.entries(parsed)) if (typeof value === 'string' && !fields.has(key.toLowerCase())) fields.set(key.toLowerCase(), value);
    return fields;
  }
  for (const [key, value] of new URLSearchParams(text)) if (!fields.has(key.toLowerCase())) fields.set(key.toLowerCase(), value);
  return fields;
}

/** `actions.ngrok.jwt_validation.tokens[i]`. */
export interface TokenVariables {
  header: Record<string, unknown>;
  location: 'header' | 'body';
  location_property: string;
  payload: Record<string, unknown>;
  signature: string;
  verified: boolean;
}

export interface JwtOutcome {
  verified: boolean;
  tokens: TokenVariables[];
  /** Empty code when verified. Never holds a token. */
  error: { code: string; message: string };
  /** A key source that failed (for the operator's log line), when one did. */
  keysProblem?: string;
}

export class JwtVerifier {
  private readonly localSets = new WeakMap<JSONWebKeySet, ReturnType<typeof createLocalJWKSet>>();

  constructor(private readonly cache: JwksCache = new JwksCache()) {}

  /** Verifies every token; the first failure decides the message. */
  async verify(config: JwtValidationConfig, presented: readonly PresentedToken[]): Promise<JwtOutcome> {
    const tokens: TokenVariables[] = [];
    let failure: { code: string; message: string } | undefined;
    let keysProblem: string | undefined;
    for (const token of presented) {
      const variables = describe(token);
      tokens.push(variables);
      const result = token.malformed ? { error: token.malformed } : await this.verifyOne(config, token.value);
      keysProblem ??= result.keysProblem;
      if (result.error === undefined) variables.verified = true;
      else failure ??= { code: result.code ?? JWT_CODES.tokenInvalid, message: `the token in the ${token.source.method} field ${JSON.stringify(token.source.name)} is invalid: ${result.error}` };
    }
    return { verified: failure === undefined, tokens, error: failure ?? { code: '', message: '' }, ...(keysProblem ? { keysProblem } : {}) };
  }

  private async verifyOne(config: JwtValidationConfig, token: string): Promise<{ error?: string; code?: string; keysProblem?: string }> {
    if (token.split('.').length !== 3) return { error: 'it is not a signed JWT (three dot-separated parts)' };
    let firstError: string | undefined;
    const unserved: string[] = [];
    for (const url of config.jkus) {
      let attempt = await this.tryKeys(config, token, url);
      if (attempt === 'unknown-kid' && (await this.cache.refreshForUnknownKid(url))) attempt = await this.tryKeys(config, token, url);
      if (attempt === 'ok') return {};
      if (attempt === 'unknown-kid') continue;
      if (attempt.startsWith('unserved:')) unserved.push(`${url} ${attempt.slice('unserved:'.length)}`);
      else firstError ??= attempt;
    }
    const keysProblem = unserved.length > 0 ? `the JWKS URL ${unserved.join('; ')}` : undefined;
    if (firstError) return { error: firstError, ...(keysProblem ? { keysProblem } : {}) };
    if (keysProblem && unserved.length === config.jkus.length) return { error: 'its signing keys could not be fetched', code: JWT_CODES.jkuUnserved, keysProblem };
    return { error: 'no key of the configured key sets matches its "kid" and algorithm', ...(keysProblem ? { keysProblem } : {}) };
  }

  /** 'ok', 'unknown-kid', 'unserved:<why>', or why the token was refused. */
  private async tryKeys(config: JwtValidationConfig, token: string, url: string): Promise<string> {
    const set = await this.cache.get(url);
    if (!set.ok) return `unserved:${set.reason}`;
    let local = this.localSets.get(set.keys);
    if (!local) this.localSets.set(set.keys, (local = createLocalJWKSet(set.keys)));
    try {
      await jwtVerify(token, local, {
        algorithms: config.algorithms,
        issuer: config.issuers,
        ...(config.audiences.length > 0 ? { audience: config.audiences } : {}),
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp'],
      });
      return 'ok';
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'ERR_JWKS_NO_MATCHING_KEY') return 'unknown-kid';
      return reason(error);
    }
  }
}

/** jose's errors in words that never quote the token. */
function reason(error: unknown): string {
  const e = error as { code?: string; claim?: string };
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return 'it has expired';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'its algorithm is not one of the allowed ones';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'its signature does not verify';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'nbf') return 'it is not valid yet';
      if (e.claim === 'iss') return 'its issuer is not allowed';
      if (e.claim === 'aud') return 'its audience is not allowed';
      return `its "${String(e.claim).slice(0, 32)}" claim is missing or wrong`;
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return 'several keys match it and none verifies it';
    default:
      return 'it is not a well-formed signed JWT';
  }
}

/** The token's parts for the result variables; integers as CEL ints. */
function describe(token: PresentedToken): TokenVariables {
  let header: Record<string, unknown> = {};
  let payload: Record<string, unknown> = {};
  try {
    header = celValue(decodeProtectedHeader(token.value)) as Record<string, unknown>;
    payload = celValue(decodeJwt(token.value)) as Record<string, unknown>;
  } catch {
    // Not decodable: the parts stay empty, and verification says why.
  }
  const signature = token.value.split('.')[2] ?? '';
  return { header, location: token.source.method, location_property: token.source.name, payload, signature, verified: false };
}

function celValue(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(celValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    // defineProperty: a claim named "__proto__" stays data.
    for (const [key, item] of Object.entries(value)) Object.defineProperty(out, key, { value: celValue(item), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}
