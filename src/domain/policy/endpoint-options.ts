/**
 * The agents' endpoint options (HTTP-POLICY.md §4) served by the policy engine: each becomes
 * rules of a policy document, so that one code path serves an option and the equivalent action.
 * They run before the endpoint's own policy. The wire shapes are ngrok-rust's and ngrok-go's
 * `proto` structs: `BasicAuth {credentials: [{username, cleartext_password, hashed_password}]}`,
 * `RequestHeaders`/`ResponseHeaders {add: ["Name:Value"], remove: [names]}`,
 * `UserAgentFilter {allow: [RE2], deny: [RE2]}`, `Compression {}`, `WebhookVerification {provider, secret, sealed_secret}`.
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
