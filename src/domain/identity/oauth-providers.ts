/**
 * The `oauth` action's providers (IDENTITY.md §2): the reference's list with their public
 * endpoints, plus those an operator adds or overrides in OAUTH_PROVIDERS_FILE. Each one's
 * user-info answer is read as that provider's is (`reader`); a provider from the file only keeps
 * a built-in's reader when it overrides that built-in (GitHub Enterprise, a self-hosted GitLab).
 */

/** How a provider's user-info answer names the user; `github` also asks /user/emails for a private email. */
export type UserinfoReader = 'standard' | 'github';

export interface OAuthProvider {
  readonly name: string;
  readonly authorize_url: string;
  readonly token_url: string;
  readonly userinfo_url: string;
  /** Scopes asked when the action lists none. */
  readonly scopes: readonly string[];
  readonly reader: UserinfoReader;
}

const BUILT_IN: readonly OAuthProvider[] = [
  {
    name: 'google',
    authorize_url: 'https://accounts.google.com/o/oauth2/v2/auth',
    token_url: 'https://oauth2.googleapis.com/token',
    userinfo_url: 'https://openidconnect.googleapis.com/v1/userinfo',
    scopes: ['openid', 'profile', 'email'],
    reader: 'standard',
  },
  {
    name: 'github',
    authorize_url: 'https://github.com/login/oauth/authorize',
    token_url: 'https://github.com/login/oauth/access_token',
    userinfo_url: 'https://api.github.com/user',
    scopes: ['read:user', 'user:email'],
    reader: 'github',
  },
  {
    name: 'gitlab',
    authorize_url: 'https://gitlab.com/oauth/authorize',
    token_url: 'https://gitlab.com/oauth/token',
    userinfo_url: 'https://gitlab.com/oauth/userinfo',
    scopes: ['openid', 'profile', 'email'],
    reader: 'standard',
  },
  {
    name: 'microsoft',
    authorize_url: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    token_url: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    userinfo_url: 'https://graph.microsoft.com/oidc/userinfo',
    scopes: ['openid', 'profile', 'email'],
    reader: 'standard',
  },
  {
    name: 'linkedin',
    authorize_url: 'https://www.linkedin.com/oauth/v2/authorization',
    token_url: 'https://www.linkedin.com/oauth/v2/accessToken',
    userinfo_url: 'https://api.linkedin.com/v2/userinfo',
    scopes: ['openid', 'profile', 'email'],
    reader: 'standard',
  },
  {
    name: 'twitch',
    authorize_url: 'https://id.twitch.tv/oauth2/authorize',
    token_url: 'https://id.twitch.tv/oauth2/token',
    userinfo_url: 'https://id.twitch.tv/oauth2/userinfo',
    scopes: ['openid', 'user:read:email'],
    reader: 'standard',
  },
];

const URL_FIELDS = ['authorize_url', 'token_url', 'userinfo_url'] as const;
const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

let providers: ReadonlyMap<string, OAuthProvider> = new Map(BUILT_IN.map((p) => [p.name, p]));

export function oauthProvider(name: string): OAuthProvider | undefined {
  return providers.get(name.toLowerCase());
}

export function oauthProviderNames(): string[] {
  return [...providers.keys()];
}

/** Installs the providers of OAUTH_PROVIDERS_FILE (parsed by parseOAuthProviders) beside the built-in ones; called once at start. */
export function useOAuthProviders(extra: readonly OAuthProvider[]): void {
  const all = new Map(BUILT_IN.map((p) => [p.name, p]));
  for (const provider of extra) all.set(provider.name, provider);
  providers = all;
}

/**
 * OAUTH_PROVIDERS_FILE's text: a JSON object, provider name → {authorize_url, token_url,
 * userinfo_url, scopes?}. Throws an Error whose message says what is wrong (never quoting more
 * than a name or a URL).
 */
export function parseOAuthProviders(text: string): OAuthProvider[] {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new Error(`is not JSON (${(error as Error).message})`);
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new Error('must be a JSON object: provider name → {"authorize_url", "token_url", "userinfo_url"}');
  const out: OAuthProvider[] = [];
  for (const [rawName, entry] of Object.entries(document as Record<string, unknown>)) {
    const name = rawName.toLowerCase();
    if (!NAME.test(name)) throw new Error(`names a provider ${JSON.stringify(rawName.slice(0, 64))}; a name is letters, digits, - and _ (at most 64)`);
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new Error(`"${name}" must be an object with authorize_url, token_url and userinfo_url`);
    const fields = entry as Record<string, unknown>;
    const unknown = Object.keys(fields).find((key) => !(URL_FIELDS as readonly string[]).includes(key) && key !== 'scopes');
    if (unknown !== undefined) throw new Error(`"${name}" has the unknown field ${JSON.stringify(unknown.slice(0, 64))}; a provider has authorize_url, token_url, userinfo_url and scopes`);
    const urls = {} as Record<(typeof URL_FIELDS)[number], string>;
    for (const field of URL_FIELDS) {
      const value = fields[field];
      if (typeof value !== 'string' || value === '') throw new Error(`"${name}" needs ${field}, an https:// URL`);
      const problem = providerUrlProblem(value);
      if (problem) throw new Error(`"${name}".${field} ${problem}`);
      urls[field] = value;
    }
    const scopes = fields.scopes;
    if (scopes !== undefined && (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && /^[\x21-\x7e]+$/.test(s)))) {
      throw new Error(`"${name}".scopes must be a list of scope names`);
    }
    const builtIn = BUILT_IN.find((p) => p.name === name);
    out.push({ name, ...urls, scopes: (scopes as string[] | undefined) ?? builtIn?.scopes ?? [], reader: builtIn?.reader ?? 'standard' });
  }
  return out;
}

/**
 * Why a provider URL cannot be used, or undefined: https only (TLS verified), but http on a
 * loopback address, where a provider run beside burrow needs no certificate (docs/DECISIONS.md).
 */
export function providerUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not hold credentials';
  if (url.hash !== '') return 'must not have a #fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return undefined;
  return 'must be an https:// URL (http:// only on a loopback address)';
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
