/**
 * The agents' endpoint options (HTTP-POLICY.md §4) served by the policy engine: each becomes
 * rules of a policy document, so that one code path serves an option and the equivalent action.
 * They run before the endpoint's own policy. The wire shapes are ngrok-rust's and ngrok-go's
 * `proto` structs: `BasicAuth {credentials: [{username, cleartext_password, hashed_password}]}`,
 * `RequestHeaders`/`ResponseHeaders {add: ["Name:Value"], remove: [names]}`,
 * `UserAgentFilter {allow: [RE2], deny: [RE2]}`, `Compression {}`, `WebhookVerification {provider, secret, sealed_secret}`,
 * `OAuth {provider, client_id, client_secret, sealed_client_secret, allow_emails, allow_domains, scopes}`,
 * `OIDC {issuer_url, client_id, client_secret, sealed_client_secret, allow_emails, allow_domains, scopes}`.
 */
import { optionsServedAs } from '../tunnels/bind-options.js';

/** Options turned into rules, on http and https endpoints (the bind-option table says which). */
export const OPTIONS_AS_RULES: ReadonlySet<string> = optionsServedAs('rules');

export type OptionsDocument = { ok: true; document: string | undefined } | { ok: false; option: string; message: string };

/**
 * The policy document (JSON) the served options of a bind's `Opts` stand for, undefined when none
 * is set; or why an option's value cannot be served. Values are literal: a `${` in one is refused,
 * since in a policy it would be read as an interpolation.
 */
export function optionsDocument(opts: Readonly<Record<string, unknown>>): OptionsDocument {
  const request: unknown[] = [];
  const response: unknown[] = [];
  try {
    // logins first: nothing else runs for a request that is not logged in
    for (const name of ['OIDC', 'OAuth'] as const) {
      const login = option(opts, name);
      if (login !== undefined) request.push(...loginRules(name, login));
    }
    const basic = option(opts, 'BasicAuth');
    if (basic !== undefined) request.push({ name: 'BasicAuth', actions: [{ type: 'basic-auth', config: { credentials: credentials(basic) } }] });
    const userAgents = option(opts, 'UserAgentFilter');
    if (userAgents !== undefined) request.push(...userAgentRules(userAgents));
    const webhook = option(opts, 'WebhookVerification');
    if (webhook !== undefined) request.push({ name: 'WebhookVerification', actions: [{ type: 'verify-webhook', config: webhookConfig(webhook) }] });
    const breaker = option(opts, 'CircuitBreaker');
    if (breaker !== undefined) request.push({ name: 'CircuitBreaker', actions: [{ type: 'circuit-breaker', config: breakerConfig(breaker) }] });
    const requestHeaders = option(opts, 'RequestHeaders');
    if (requestHeaders !== undefined) request.push(...headerRules('RequestHeaders', requestHeaders));
    const responseHeaders = option(opts, 'ResponseHeaders');
    if (responseHeaders !== undefined) response.push(...headerRules('ResponseHeaders', responseHeaders));
    // `Compression: {}` means on (presence-only option); after the header rules, as the reference's modules run.
    if (option(opts, 'Compression') !== undefined) response.push({ name: 'Compression', actions: [{ type: 'compress-response' }] });
  } catch (error) {
    if (error instanceof OptionProblem) return { ok: false, option: error.option, message: error.message };
    throw error;
  }
  if (request.length === 0 && response.length === 0) return { ok: true, document: undefined };
  return { ok: true, document: JSON.stringify({ on_http_request: request, on_http_response: response }) };
}

class OptionProblem extends Error {
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(message);
  }
}

/** An option's value by its name in any case (as the protocol layer reads names), undefined when unset. */
function option(opts: Readonly<Record<string, unknown>>, name: string): Record<string, unknown> | undefined {
  const key = Object.keys(opts).findLast((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : opts[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new OptionProblem(name, `Opts.${name} must be an object.`);
  return value as Record<string, unknown>;
}

function strings(name: string, value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new OptionProblem(name, `Opts.${name}.${field} must be a list of strings.`);
  return value as string[];
}

function literal(name: string, text: string): string {
  if (text.includes('${')) throw new OptionProblem(name, `Opts.${name} holds "\${", which burrow's policy engine would read as an interpolation; remove it.`);
  return text;
}

function credentials(value: Record<string, unknown>): string[] {
  const list = value.credentials;
  if (!Array.isArray(list) || list.length === 0) throw new OptionProblem('BasicAuth', 'Opts.BasicAuth.credentials must list at least one username and password.');
  return list.map((entry: unknown) => {
    const credential = (entry ?? {}) as Record<string, unknown>;
    if (typeof credential.hashed_password === 'string' && credential.hashed_password !== '') {
      throw new OptionProblem('BasicAuth', 'Opts.BasicAuth: hashed passwords are not served; send the password in cleartext_password.');
    }
    const username = credential.username;
    const password = credential.cleartext_password;
    if (typeof username !== 'string' || typeof password !== 'string' || username === '' || username.includes(':')) {
      throw new OptionProblem('BasicAuth', 'Opts.BasicAuth.credentials: each needs a username (without ":") and a cleartext_password.');
    }
    // Never quote a credential: it holds a password.
    return literal('BasicAuth', `${username}:${password}`);
  });
}

function headerRules(name: 'RequestHeaders' | 'ResponseHeaders', value: Record<string, unknown>): unknown[] {
  const rules: unknown[] = [];
  const remove = strings(name, value.remove, 'remove');
  if (remove.length > 0) rules.push({ name, actions: [{ type: 'remove-headers', config: { headers: remove } }] });
  const headers: Record<string, string> = {};
  for (const line of strings(name, value.add, 'add')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new OptionProblem(name, `Opts.${name}.add entries must be "Name:Value".`);
    Object.defineProperty(headers, line.slice(0, colon).trim(), { value: literal(name, line.slice(colon + 1).trim()), enumerable: true, writable: true, configurable: true });
  }
  if (Object.keys(headers).length > 0) rules.push({ name, actions: [{ type: 'add-headers', config: { headers } }] });
  return rules;
}

/**
 * UserAgentFilter: a User-Agent matching an `allow` pattern passes; else one matching a `deny`
 * pattern, or any when `allow` is given, is refused 403. Patterns are RE2 (`matches`), quoted as
 * CEL string literals (JSON's escapes are CEL's).
 */
function userAgentRules(value: Record<string, unknown>): unknown[] {
  const allow = strings('UserAgentFilter', value.allow, 'allow');
  const deny = strings('UserAgentFilter', value.deny, 'deny');
  const any = (patterns: string[]) => patterns.map((p) => `req.user_agent.matches(${JSON.stringify(p)})`).join(' || ');
  const refused: string[] = [];
  if (deny.length > 0) refused.push(any(deny));
  if (allow.length > 0) refused.push('true');
  if (refused.length === 0) return [];
  const expression = allow.length > 0 ? `!(${any(allow)}) && (${refused.join(' || ')})` : refused[0]!;
  return [{ name: 'UserAgentFilter', expressions: [expression], actions: [{ type: 'deny', config: { status_code: 403 } }] }];
}

/** CircuitBreaker {error_threshold}: the action with that threshold and its other defaults (0 or absent: the default). */
function breakerConfig(value: Record<string, unknown>): Record<string, unknown> {
  const threshold = value.error_threshold;
  if (threshold === undefined || threshold === null || threshold === 0) return {};
  if (typeof threshold !== 'number') throw new OptionProblem('CircuitBreaker', 'Opts.CircuitBreaker.error_threshold must be a number.');
  return { error_threshold: threshold };
}

/** WebhookVerification {provider, secret}: the verify-webhook action, enforced. A sealed secret needs the hosted service's key. */
function webhookConfig(value: Record<string, unknown>): Record<string, unknown> {
  const { provider, secret, sealed_secret: sealed } = value;
  if (typeof provider !== 'string' || provider === '') throw new OptionProblem('WebhookVerification', 'Opts.WebhookVerification.provider must name the provider, such as "github".');
  if ((secret === undefined || secret === '') && sealed !== undefined && sealed !== null && sealed !== '') {
    throw new OptionProblem('WebhookVerification', 'Opts.WebhookVerification: sealed secrets are not served; send the secret itself.');
  }
  // Never quote the secret.
  if (typeof secret !== 'string' || secret === '') throw new OptionProblem('WebhookVerification', 'Opts.WebhookVerification.secret must be the signing secret.');
  return { provider, secret: literal('WebhookVerification', secret) };
}

/**
 * OIDC / OAuth: the login action, then (as the reference's modules do) the user's email, name and
 * id to the agent in ngrok-auth-user-* headers and the user's tokens in ngrok-auth-oauth-access-token
 * / -refresh-token, each only when the provider gave one (a client's own copies are removed first),
 * and a 403 for a user outside allow_emails / allow_domains (compared without case).
 */
/** The reference's OAuth module's upstream headers of the user's tokens (its OIDC module "works similarly"). */
const TOKEN_HEADERS = { 'ngrok-auth-oauth-access-token': 'access_token', 'ngrok-auth-oauth-refresh-token': 'refresh_token' } as const;

function loginRules(name: 'OIDC' | 'OAuth', value: Record<string, unknown>): unknown[] {
  const { client_id: clientId, client_secret: secret, sealed_client_secret: sealed } = value;
  if ((secret === undefined || secret === '') && sealed !== undefined && sealed !== null && sealed !== '') {
    throw new OptionProblem(name, `Opts.${name}: sealed client secrets are not served; send the client_secret itself.`);
  }
  // Never quote the secret.
  if (typeof clientId !== 'string' || clientId === '' || typeof secret !== 'string' || secret === '') {
    throw new OptionProblem(name, `Opts.${name} needs client_id and client_secret: burrow has no managed apps, so register your own with the provider (callback URL https://<endpoint host>/ngrok/callback).`);
  }
  const config: Record<string, unknown> = { client_id: literal(name, clientId), client_secret: literal(name, secret) };
  if (name === 'OIDC') {
    if (typeof value.issuer_url !== 'string' || value.issuer_url === '') throw new OptionProblem(name, 'Opts.OIDC.issuer_url must be the URL of your OpenID provider.');
    config.issuer_url = literal(name, value.issuer_url);
  } else {
    if (typeof value.provider !== 'string' || value.provider === '') throw new OptionProblem(name, 'Opts.OAuth.provider must name the provider, such as "google".');
    config.provider = value.provider;
  }
  const scopes = strings(name, value.scopes, 'scopes');
  if (scopes.length > 0) config.scopes = scopes;
  const action = name === 'OIDC' ? 'actions.ngrok.oidc' : 'actions.ngrok.oauth';
  const results = `${action}.identity`;
  const rules: unknown[] = [{ name, actions: [{ type: name === 'OIDC' ? 'openid-connect' : 'oauth', config }] }];
  const emails = strings(name, value.allow_emails, 'allow_emails').map((e) => e.toLowerCase());
  const domains = strings(name, value.allow_domains, 'allow_domains').map((d) => d.toLowerCase().replace(/^@/, ''));
  if (emails.length > 0 || domains.length > 0) {
    const email = `${results}.email.lowerAscii()`;
    const allowed = [...(emails.length > 0 ? [`${email} in ${JSON.stringify(emails)}`] : []), ...domains.map((d) => `${email}.endsWith(${JSON.stringify(`@${d}`)})`)];
    rules.push({
      name: `${name} allow list`,
      expressions: [`!(${allowed.join(' || ')})`],
      actions: [{ type: 'custom-response', config: { status_code: 403, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `403 Forbidden: \${${results}.email} is not allowed to use this endpoint.\n` } }],
    });
  }
  rules.push(
    { name: `${name} identity`, actions: [{ type: 'remove-headers', config: { headers: ['ngrok-auth-user-email', 'ngrok-auth-user-name', 'ngrok-auth-user-id', ...Object.keys(TOKEN_HEADERS)] } }] },
    {
      name: `${name} identity`,
      actions: [{ type: 'add-headers', config: { headers: { 'ngrok-auth-user-email': `\${${results}.email}`, 'ngrok-auth-user-name': `\${${results}.name}`, 'ngrok-auth-user-id': `\${${results}.provider_user_id}` } } }],
    },
    // the reference leaves a token's header out when there is none (its managed apps); here, when the provider gave none or it did not fit the session
    ...Object.entries(TOKEN_HEADERS).map(([header, token]) => ({
      name: `${name} tokens`,
      expressions: [`${action}.${token} != ""`],
      actions: [{ type: 'add-headers', config: { headers: { [header]: `\${${action}.${token}}` } } }],
    })),
  );
  return rules;
}
