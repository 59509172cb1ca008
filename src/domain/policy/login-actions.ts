/**
 * Configuration of the `openid-connect` and `oauth` actions (IDENTITY.md §1–§2), checked when
 * the policy is written: the reference's fields, with client_id and client_secret required (no
 * managed apps here). The provider is not reached: a policy is accepted while it is down.
 */
import type { MapNode, TreeNode } from './parse.js';
import { CODES, fail, kindOf, quoted } from './problem.js';
import { scalarOrKind } from './structure.js';
import { durationSeconds, only, optionalBool, optionalString, required, stringList, value, type Ctx } from './http-actions.js';
import { DEFAULT_IDLE_SECONDS, DEFAULT_MAX_SECONDS, derivedLoginKey, OIDC_DEFAULT_SCOPES, type LoginConfig, type LoginKind } from '../identity/login-config.js';
import { oauthProvider, oauthProviderNames, providerUrlProblem } from '../identity/oauth-providers.js';
import type { HttpAction } from './types.js';

const COMMON = ['auth_id', 'client_id', 'client_secret', 'scopes', 'authz_url_params', 'max_session_duration', 'idle_session_timeout', 'idle_session_duration', 'userinfo_refresh_interval', 'allow_cors_preflight', 'auth_cookie_domain'];
/** Parameters burrow sets on the authorization URL itself. */
const RESERVED_PARAMS = new Set(['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method']);
const MAX_SCOPES = 32;
const MAX_PARAMS = 16;
const SECRET_MAX_BYTES = 1024;

export function validateLoginAction(type: LoginKind, label: string, where: string, config: TreeNode | null): HttpAction {
  const ctx: Ctx = { label, where, type };
  if (config === null) required(ctx, type === 'oauth' ? 'provider' : 'issuer_url', type === 'oauth' ? `one of ${oauthProviderNames().join(', ')}` : 'the URL of your OpenID provider');
  if (config.kind !== 'map') fail(CODES.configMalformed, `${where}: config must be a mapping, but it is ${kindOf(scalarOrKind(config))}.`);
  return { type, config: loginConfig(ctx, type, config) };
}

function loginConfig(ctx: Ctx, kind: LoginKind, map: MapNode): LoginConfig {
  only(ctx, map, [kind === 'oauth' ? 'provider' : 'issuer_url', ...COMMON]);
  let provider: string;
  let defaultScopes: readonly string[];
  if (kind === 'oauth') {
    const name = optionalString(ctx, map, 'provider');
    if (name === undefined || name === '') required(ctx, 'provider', `one of ${oauthProviderNames().join(', ')}`);
    const known = oauthProvider(name);
    if (!known) fail(CODES.configInvalid, `${ctx.where}: config.provider ${quoted(name, 64)} is not a provider burrow knows; use one of ${oauthProviderNames().join(', ')}, or add it to OAUTH_PROVIDERS_FILE.`);
    provider = known.name;
    defaultScopes = known.scopes;
  } else {
    const issuer = optionalString(ctx, map, 'issuer_url');
    if (issuer === undefined || issuer === '') required(ctx, 'issuer_url', 'the URL of your OpenID provider, which serves /.well-known/openid-configuration');
    const problem = providerUrlProblem(issuer);
    if (problem) fail(CODES.configInvalid, `${ctx.where}: config.issuer_url ${quoted(issuer, 200)} ${problem}.`);
    provider = issuer;
    defaultScopes = OIDC_DEFAULT_SCOPES;
  }
  const clientId = literal(ctx, 'client_id', optionalString(ctx, map, 'client_id'));
  // Never quote the secret.
  const clientSecret = literal(ctx, 'client_secret', optionalString(ctx, map, 'client_secret'));
  if (Buffer.byteLength(clientSecret) > SECRET_MAX_BYTES) fail(CODES.configInvalid, `${ctx.where}: config.client_secret is longer than ${SECRET_MAX_BYTES} bytes.`);
  const authId = optionalString(ctx, map, 'auth_id');
  if (authId !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(authId)) fail(CODES.configInvalid, `${ctx.where}: config.auth_id ${quoted(authId, 64)} must be 1 to 64 letters, digits, - or _.`);
  const cookieDomain = domainName(ctx, optionalString(ctx, map, 'auth_cookie_domain'));
  const refreshText = optionalString(ctx, map, 'userinfo_refresh_interval');
  const refreshSeconds = refreshText === undefined ? undefined : durationSeconds(refreshText);
  if (refreshText !== undefined && (refreshSeconds === undefined || refreshSeconds < 1 || refreshSeconds > 90 * 86400)) {
    fail(CODES.configInvalid, `${ctx.where}: config.userinfo_refresh_interval ${quoted(refreshText, 32)} must be a duration from 1s to 2160h (90 days), such as "15m".`);
  }
  const scopes = stringList(ctx, map, 'scopes', false, MAX_SCOPES);
  scopes.forEach((scope, i) => {
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope)) fail(CODES.configInvalid, `${ctx.where}: config.scopes, entry ${i + 1}, ${quoted(scope, 64)}, is not a scope name (no spaces, quotes or backslashes).`);
  });
  // openid-connect always asks `openid`: without it there is no ID token.
  const chosen = scopes.length === 0 ? [...defaultScopes] : kind === 'openid-connect' && !scopes.includes('openid') ? ['openid', ...scopes] : scopes;
  const idle = duration(ctx, map, value(map, 'idle_session_timeout') ? 'idle_session_timeout' : 'idle_session_duration', DEFAULT_IDLE_SECONDS);
  const max = duration(ctx, map, 'max_session_duration', DEFAULT_MAX_SECONDS);
  return {
    kind,
    key: authId ?? derivedLoginKey(kind, provider, clientId),
    provider,
    clientId,
    clientSecret,
    scopes: chosen,
    authzUrlParams: authzParams(ctx, map),
    idleSeconds: idle,
    maxSeconds: max,
    allowCorsPreflight: optionalBool(ctx, map, 'allow_cors_preflight', false),
    ...(refreshSeconds !== undefined ? { refreshSeconds } : {}),
    ...(cookieDomain !== undefined ? { cookieDomain } : {}),
  };
}

/** auth_cookie_domain: a DNS name of two labels or more (a cookie for a top-level name is refused by browsers); whether it covers the endpoint's host is checked at bind. */
function domainName(ctx: Ctx, text: string | undefined): string | undefined {
  if (text === undefined || text === '') return undefined;
  const domain = text.trim().toLowerCase().replace(/^\./, '');
  const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
  const labels = domain.split('.');
  if (domain.length > 253 || labels.length < 2 || !labels.every((l) => label.test(l)) || /^\d+$/.test(labels.at(-1)!)) {
    fail(CODES.configInvalid, `${ctx.where}: config.auth_cookie_domain ${quoted(text, 64)} must be a domain name of two labels or more (the endpoint's host or a parent of it), such as "example.com".`);
  }
  return domain;
}

/** client_id and client_secret: required, and literal (they are read again at the callback, where no request is evaluated). */
function literal(ctx: Ctx, key: 'client_id' | 'client_secret', text: string | undefined): string {
  if (text === undefined || text === '') {
    fail(CODES.configInvalid, `${ctx.where}: ${ctx.type} needs config.${key}: burrow has no managed ${ctx.type === 'oauth' ? 'OAuth' : 'OpenID Connect'} apps, so register an app with the provider (callback URL https://<your endpoint's host>/ngrok/callback) and give its ${key}.`);
  }
  if (text.includes('${')) fail(CODES.configInvalid, `${ctx.where}: config.${key} cannot interpolate here; write the value itself.`);
  return text;
}

function duration(ctx: Ctx, map: MapNode, key: string, fallback: number): number {
  const text = optionalString(ctx, map, key);
  if (text === undefined) return fallback;
  const seconds = durationSeconds(text);
  if (seconds === undefined || seconds < 60 || seconds > 90 * 86400) fail(CODES.configInvalid, `${ctx.where}: config.${key} ${quoted(text, 32)} must be a duration from 1m to 2160h (90 days), such as "8h".`);
  return seconds;
}

function authzParams(ctx: Ctx, map: MapNode): Array<[string, string]> {
  const node = value(map, 'authz_url_params');
  if (!node) return [];
  if (node.kind !== 'map') fail(CODES.configMalformed, `${ctx.where}: config.authz_url_params must be a mapping of parameter names to values, but it is ${kindOf(scalarOrKind(node))}.`);
  if (node.entries.length > MAX_PARAMS) fail(CODES.configInvalid, `${ctx.where}: config.authz_url_params has ${node.entries.length} entries; at most ${MAX_PARAMS} are allowed.`);
  return node.entries.map((entry) => {
    if (RESERVED_PARAMS.has(entry.key)) fail(CODES.configInvalid, `${ctx.where}: config.authz_url_params.${entry.key} is set by burrow itself and cannot be given.`);
    if (entry.value.kind !== 'scalar' || typeof entry.value.value !== 'string') fail(CODES.configMalformed, `${ctx.where}: config.authz_url_params.${entry.key.slice(0, 32)} must be a string.`);
    return [entry.key, entry.value.value] as [string, string];
  });
}
