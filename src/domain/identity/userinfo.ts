/**
 * Who logged in: from an OpenID Connect ID token (and its user-info endpoint when the token has no
 * email), or from an OAuth provider's user-info answer read as that provider's is (GitHub: /user,
 * and /user/emails when the email is private).
 */
import { createHash } from 'node:crypto';
import type { LoginConfig } from './login-config.js';
import type { OAuthProvider } from './oauth-providers.js';
import { jsonObject, ProviderUnavailable, TokenRefused, type ProviderFetch } from './provider-fetch.js';
import type { EdgeIdentity } from './session.js';

export interface DiscoveryDocument {
  readonly issuer: string;
  readonly authorization_endpoint: string;
  readonly token_endpoint: string;
  readonly jwks_uri: string;
  readonly userinfo_endpoint?: string;
  readonly token_endpoint_auth_methods_supported?: readonly string[];
}

export async function oidcIdentity(fetch: ProviderFetch, login: LoginConfig, claims: Record<string, unknown>, discovery: DiscoveryDocument, accessToken: string | undefined, deadline: number): Promise<EdgeIdentity> {
  let merged = claims;
  if (typeof claims.email !== 'string' && discovery.userinfo_endpoint && accessToken) {
    const info = await userinfo(fetch, discovery.userinfo_endpoint, accessToken, deadline);
    // OpenID Connect Core §5.3.2: user-info about another subject is not used.
    if (info.sub === claims.sub) merged = { ...info, ...claims };
  }
  return identityOf(login, String(claims.sub), merged);
}

export async function fetchIdentity(fetch: ProviderFetch, login: LoginConfig, provider: OAuthProvider, accessToken: string, deadline: number): Promise<EdgeIdentity> {
  const info = await userinfo(fetch, provider.userinfo_url, accessToken, deadline);
  const id = info.sub ?? info.id;
  if ((typeof id !== 'string' && typeof id !== 'number') || String(id) === '') throw new ProviderUnavailable('its user-info answer names no user (sub or id)');
  let email = typeof info.email === 'string' ? info.email : undefined;
  if (email === undefined && provider.reader === 'github') email = await githubPrimaryEmail(fetch, provider.userinfo_url, accessToken, deadline);
  return identityOf(login, String(id), { ...info, email });
}

/**
 * The identity read again with the session's access token (userinfo_refresh_interval): OpenID
 * Connect's user-info endpoint, or the OAuth provider's as at the login. It must name the same
 * user; a field the answer leaves out keeps its value.
 */
export async function refreshedIdentity(fetch: ProviderFetch, login: LoginConfig, previous: EdgeIdentity, source: DiscoveryDocument | OAuthProvider, accessToken: string, deadline: number): Promise<EdgeIdentity> {
  let identity: EdgeIdentity;
  if ('userinfo_url' in source) identity = await fetchIdentity(fetch, login, source, accessToken, deadline);
  else {
    if (!source.userinfo_endpoint) throw new TokenRefused('its discovery document has no userinfo_endpoint to read the user again');
    const info = await userinfo(fetch, source.userinfo_endpoint, accessToken, deadline);
    identity = identityOf(login, String(info.sub ?? ''), { email: previous.email, name: previous.name, ...info });
  }
  if (identity.providerUserId !== previous.providerUserId) throw new TokenRefused('its user-info answer names another user');
  return identity;
}

/** Bounds on what the session keeps of the user, so that it always fits its cookies (session.ts). */
const MAX_SUBJECT = 255;
const MAX_EMAIL = 320;
const MAX_NAME = 4096;

function identityOf(login: LoginConfig, subject: string, claims: Record<string, unknown>): EdgeIdentity {
  // OpenID Connect Core §2: sub is at most 255 ASCII characters; cut, two users could become one
  if (subject.length > MAX_SUBJECT) throw new ProviderUnavailable(`it names the user with an identifier over ${MAX_SUBJECT} characters`);
  const text = (key: string) => (typeof claims[key] === 'string' ? (claims[key] as string) : '');
  const email = text('email').slice(0, MAX_EMAIL);
  return {
    id: `idn_${createHash('sha256').update(`${login.kind}\n${login.provider}\n${subject}`).digest('hex').slice(0, 27)}`,
    email,
    name: (text('name') || text('preferred_username') || text('login') || text('username') || email).slice(0, MAX_NAME),
    providerUserId: subject,
  };
}

async function userinfo(fetch: ProviderFetch, url: string, accessToken: string, deadline: number): Promise<Record<string, unknown>> {
  const answer = await fetch(url, { headers: { authorization: `Bearer ${accessToken}` }, deadline });
  if (answer.status === 401 || answer.status === 403) throw new TokenRefused(`its user-info endpoint refused the access token (HTTP ${answer.status})`);
  if (answer.status !== 200) throw new ProviderUnavailable(`its user-info endpoint answered HTTP ${answer.status}`);
  return jsonObject(answer, 'user-info');
}

/** GitHub's /user/emails: the primary, verified address. */
async function githubPrimaryEmail(fetch: ProviderFetch, userUrl: string, accessToken: string, deadline: number): Promise<string | undefined> {
  const answer = await fetch(`${userUrl.replace(/\/+$/, '')}/emails`, { headers: { authorization: `Bearer ${accessToken}` }, deadline });
  if (answer.status !== 200) return undefined;
  let list: unknown;
  try {
    list = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(list)) return undefined;
  const primary = list.find((entry) => typeof entry === 'object' && entry !== null && entry.primary === true && entry.verified === true && typeof entry.email === 'string');
  return primary ? (primary.email as string) : undefined;
}
