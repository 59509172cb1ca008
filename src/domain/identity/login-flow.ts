/**
 * The edge login (IDENTITY.md §1–§2): the authorization code flow with PKCE, `state` and (OpenID
 * Connect) `nonce`, answered on the endpoint's own host at /ngrok/login, /ngrok/callback and
 * /ngrok/logout. A provider that cannot be reached is a 502 page naming it, within 5 s; a login
 * refused (forged or replayed state, a bad ID token, the provider's own refusal) a 403 page. No
 * code, token, secret or cookie value is ever put in a page or a log reason.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, customFetch, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { providerLabel, type LoginConfig } from './login-config.js';
import { oauthProvider } from './oauth-providers.js';
import { jsonObject, providerFetch, ProviderUnavailable, TokenRefused, type ProviderFetch } from './provider-fetch.js';
import { clearCookie, clearSessionCookies, LOGIN_WINDOW_SECONDS, newSessionId, pendingCookieName, readCookie, sessionCookieNames, setCookie, type EdgeIdentity, type EdgeSession, type ProviderTokens, type SessionCodec } from './session.js';
import { fetchIdentity, oidcIdentity, refreshedIdentity, type DiscoveryDocument } from './userinfo.js';

/** Everything a login makes of the provider is over by then, so the user's page comes within 5 s. */
const LOGIN_BUDGET_MS = 4500;
const DISCOVERY_TTL_MS = 3600_000;
const CONSUMED_MAX = 100_000;

export interface LoginEndpoint {
  /** The session's host (loginHost of the Host header). */
  readonly host: string;
  /** scheme://Host as the client wrote it: the callback URL's origin. */
  readonly origin: string;
  readonly secure: boolean;
}

export interface LoginAnswer {
  readonly status: number;
  readonly headers: string[];
  readonly body: string;
  /** Set on a failure worth a log line: which provider, and why (never a secret). */
  readonly problem?: { readonly provider: string; readonly reason: string };
}

class LoginRefused extends Error {}

export class EdgeLoginFlow {
  private readonly discoveries = new Map<string, { document: DiscoveryDocument; at: number }>();
  private readonly keySets = new Map<string, JWTVerifyGetKey>();
  /** States already used at the callback (per instance), until their login window is over. */
  private readonly consumed = new Map<string, number>();

  constructor(
    private readonly codec: SessionCodec,
    private readonly fetch: ProviderFetch = providerFetch,
    private readonly now: () => number = Date.now,
  ) {}

  /** Redirects to the provider; `force` asks it to authenticate again (an explicit /ngrok/login). */
  async begin(login: LoginConfig, endpoint: LoginEndpoint, redirectPath: string, force: boolean, cookies: readonly string[] = []): Promise<LoginAnswer> {
    const deadline = this.now() + LOGIN_BUDGET_MS;
    let authorizeUrl: string;
    try {
      authorizeUrl = login.kind === 'oauth' ? oauthProvider(login.provider)!.authorize_url : (await this.discovery(login, deadline)).authorization_endpoint;
    } catch (error) {
      return this.failure(login, error);
    }
    const pending = { state: random(), nonce: random(), verifier: random(), redirectPath: safePath(redirectPath), createdAt: Math.floor(this.now() / 1000) };
    const url = new URL(authorizeUrl);
    const params: Array<[string, string]> = [
      ['response_type', 'code'],
      ['client_id', login.clientId],
      ['redirect_uri', `${endpoint.origin}/ngrok/callback`],
      ['scope', login.scopes.join(' ')],
      ['state', pending.state],
      ['code_challenge', createHash('sha256').update(pending.verifier).digest('base64url')],
      ['code_challenge_method', 'S256'],
    ];
    if (login.kind === 'openid-connect') params.push(['nonce', pending.nonce]);
    if (force && login.kind === 'openid-connect') params.push(['prompt', 'login']);
    for (const [name, value] of [...params, ...login.authzUrlParams]) url.searchParams.set(name, value);
    const cookie = setCookie(pendingCookieName(login), this.codec.sealPending(endpoint.host, login, pending), LOGIN_WINDOW_SECONDS, endpoint.secure);
    // a session that did not open (expired, or of an older key) goes, every piece of it
    const stale = sessionCookieNames(cookies, login).length === 0 ? [] : clearSessionCookies(login, endpoint.host, cookies, endpoint.secure);
    return { status: 302, headers: ['Location', url.toString(), 'Set-Cookie', cookie, ...stale.flatMap((c) => ['Set-Cookie', c]), 'Cache-Control', 'no-store'], body: '' };
  }

  /** The provider's redirect back: the login among `logins` whose login cookie holds this `state`. */
  async callback(logins: readonly LoginConfig[], endpoint: LoginEndpoint, query: URLSearchParams, cookies: readonly string[]): Promise<LoginAnswer> {
    const nowSeconds = Math.floor(this.now() / 1000);
    const state = query.get('state') ?? '';
    this.forgetExpired(nowSeconds);
    let found: { login: LoginConfig; pending: ReturnType<SessionCodec['openPending']> & object } | undefined;
    for (const login of logins) {
      const value = readCookie(cookies, pendingCookieName(login));
      const pending = value === undefined ? undefined : this.codec.openPending(endpoint.host, login, value, nowSeconds);
      if (pending && state !== '' && pending.state === state) found = { login, pending };
    }
    if (this.consumed.has(state)) return refusal('This login link was already used. Start again from the page you wanted.', 'replayed callback');
    if (!found) return refusal('This login does not match one started here, or it expired. Start again from the page you wanted.', 'unknown or forged state');
    const { login, pending } = found;
    if (this.consumed.size < CONSUMED_MAX) this.consumed.set(state, pending.createdAt + LOGIN_WINDOW_SECONDS);
    const clearPending = clearCookie(pendingCookieName(login), endpoint.secure);
    const providerError = query.get('error');
    if (providerError !== null) return refusal(`${providerLabel(login)} did not log you in (${printable(providerError)}).`, `provider answered ${printable(providerError)}`, [clearPending]);
    const code = query.get('code');
    if (!code) return refusal('The provider sent no authorization code.', 'no code', [clearPending]);
    let identity: EdgeIdentity & ProviderTokens;
    try {
      identity = await this.identify(login, endpoint, code, pending, this.now() + LOGIN_BUDGET_MS);
    } catch (error) {
      const answer = this.failure(login, error);
      return { ...answer, headers: [...answer.headers, 'Set-Cookie', clearPending] };
    }
    const session = { ...identity, sessionId: newSessionId(), createdAt: nowSeconds, activeAt: nowSeconds, identityAt: nowSeconds };
    const set = this.codec.sessionCookies(endpoint.host, login, session, login.maxSeconds, endpoint.secure, cookies).flatMap((c) => ['Set-Cookie', c]);
    return { status: 302, headers: ['Location', pending.redirectPath, ...set, 'Set-Cookie', clearPending, 'Cache-Control', 'no-store'], body: '' };
  }

  /** Clears the session cookie (every piece of it); then to `redirectPath`, or a page saying so. */
  logout(login: LoginConfig, endpoint: LoginEndpoint, redirectPath: string | null, cookies: readonly string[] = []): LoginAnswer {
    const cleared = [...clearSessionCookies(login, endpoint.host, cookies, endpoint.secure).flatMap((c) => ['Set-Cookie', c]), 'Cache-Control', 'no-store'];
    if (redirectPath !== null) return { status: 302, headers: ['Location', safePath(redirectPath), ...cleared], body: '' };
    return page(200, 'Logged out', 'You are logged out of this endpoint.', cleared);
  }

  /**
   * userinfo_refresh_interval: the user read again with the session's access token (renewed with
   * its refresh token when the provider refuses it), then a 307 back to `target` with the session
   * renewed, so the policy runs on the fresh identity. A provider that refuses the session ends
   * it: its cookies are cleared and a login starts. One that cannot be reached is a 502 page.
   */
  async refresh(login: LoginConfig, endpoint: LoginEndpoint, session: EdgeSession, target: string, cookies: readonly string[]): Promise<LoginAnswer> {
    const deadline = this.now() + LOGIN_BUDGET_MS;
    let tokens: ProviderTokens = { idToken: session.idToken ?? '', accessToken: session.accessToken ?? '', refreshToken: session.refreshToken ?? '' };
    let identity: EdgeIdentity;
    try {
      try {
        if (tokens.accessToken === '') throw new TokenRefused('no access token is kept to read the user again');
        identity = await this.reread(login, session, tokens.accessToken, deadline);
      } catch (error) {
        if (!(error instanceof TokenRefused) || tokens.refreshToken === '') throw error;
        tokens = await this.renewTokens(login, tokens, deadline);
        identity = await this.reread(login, session, tokens.accessToken, deadline);
      }
    } catch (error) {
      if (!(error instanceof TokenRefused)) return this.failure(login, error);
      const again = await this.begin(login, endpoint, target, false, cookies);
      return again.problem ? again : { ...again, problem: { provider: providerLabel(login), reason: `session ended: ${error.message}` } };
    }
    const nowSeconds = Math.floor(this.now() / 1000);
    const renewed = { ...session, ...identity, ...tokens, identityAt: nowSeconds, activeAt: nowSeconds, refreshed: true };
    const set = this.codec.sessionCookies(endpoint.host, login, renewed, session.createdAt + login.maxSeconds - nowSeconds, endpoint.secure, cookies);
    return { status: 307, headers: ['Location', safePath(target), ...set.flatMap((c) => ['Set-Cookie', c]), 'Cache-Control', 'no-store'], body: '' };
  }

  private async reread(login: LoginConfig, session: EdgeSession, accessToken: string, deadline: number): Promise<EdgeIdentity> {
    const source = login.kind === 'oauth' ? oauthProvider(login.provider)! : await this.discovery(login, deadline);
    return refreshedIdentity(this.fetch, login, session, source, accessToken, deadline);
  }

  /** The refresh_token grant: new tokens (those the answer leaves out are kept); a refusal is a TokenRefused. */
  private async renewTokens(login: LoginConfig, tokens: ProviderTokens, deadline: number): Promise<ProviderTokens> {
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
    const answer = await this.tokenRequest(login, form, deadline);
    if (answer.status >= 400 || typeof answer.tokens.error === 'string') throw new TokenRefused(`the token endpoint refused the refresh token (${printable(String(answer.tokens.error ?? answer.status))})`);
    const text = (key: string, kept: string) => (typeof answer.tokens[key] === 'string' ? (answer.tokens[key] as string) : kept);
    return { idToken: text('id_token', tokens.idToken), accessToken: text('access_token', tokens.accessToken), refreshToken: text('refresh_token', tokens.refreshToken) };
  }

  /** A POST to the token endpoint with the client's credentials (HTTP Basic when the provider takes it); a 5xx or no answer is a ProviderUnavailable. */
  private async tokenRequest(login: LoginConfig, form: URLSearchParams, deadline: number): Promise<{ status: number; tokens: Record<string, unknown>; discovery: DiscoveryDocument | undefined }> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    let tokenUrl: string;
    let discovery: DiscoveryDocument | undefined;
    if (login.kind === 'openid-connect') {
      discovery = await this.discovery(login, deadline);
      tokenUrl = discovery.token_endpoint;
      const methods = discovery.token_endpoint_auth_methods_supported;
      if (methods === undefined || methods.includes('client_secret_basic')) {
        headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(login.clientId)}:${encodeURIComponent(login.clientSecret)}`).toString('base64')}`;
      } else form.set('client_id', login.clientId), form.set('client_secret', login.clientSecret);
    } else {
      tokenUrl = oauthProvider(login.provider)!.token_url;
      form.set('client_id', login.clientId);
      form.set('client_secret', login.clientSecret);
    }
    const answer = await this.fetch(tokenUrl, { method: 'POST', headers, body: form.toString(), deadline });
    if (answer.status >= 500 || answer.status === 0) throw new ProviderUnavailable(`its token endpoint answered HTTP ${answer.status}`);
    return { status: answer.status, tokens: jsonObject(answer, 'token'), discovery };
  }

  private async identify(login: LoginConfig, endpoint: LoginEndpoint, code: string, pending: { verifier: string; nonce: string }, deadline: number): Promise<EdgeIdentity & ProviderTokens> {
    const redirectUri = `${endpoint.origin}/ngrok/callback`;
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: pending.verifier });
    const { status, tokens, discovery } = await this.tokenRequest(login, form, deadline);
    if (status >= 400 || typeof tokens.error === 'string') throw new LoginRefused(`the token endpoint refused the code (${printable(String(tokens.error ?? status))})`);
    const accessToken = typeof tokens.access_token === 'string' ? tokens.access_token : undefined;
    const kept = { idToken: '', accessToken: accessToken ?? '', refreshToken: typeof tokens.refresh_token === 'string' ? tokens.refresh_token : '' };
    if (login.kind === 'oauth') {
      if (!accessToken) throw new ProviderUnavailable('its token answer has no access_token');
      return { ...(await fetchIdentity(this.fetch, login, oauthProvider(login.provider)!, accessToken, deadline)), ...kept };
    }
    if (typeof tokens.id_token !== 'string') throw new ProviderUnavailable('its token answer has no id_token');
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(tokens.id_token, this.keySet(discovery!.jwks_uri, deadline), {
        issuer: discovery!.issuer,
        audience: login.clientId,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: 60,
      }));
    } catch (error) {
      if (error instanceof ProviderUnavailable) throw error;
      const name = (error as { code?: string }).code ?? '';
      if (name === 'ERR_JWKS_TIMEOUT' || name === 'ERR_JOSE_GENERIC') throw new ProviderUnavailable(`its keys (jwks_uri) could not be read`);
      throw new LoginRefused(`the ID token did not verify (${name || 'invalid'})`);
    }
    if (claims.nonce !== pending.nonce) throw new LoginRefused('the ID token does not carry the nonce of this login');
    return { ...(await oidcIdentity(this.fetch, login, claims, discovery!, accessToken, deadline)), ...kept, idToken: tokens.id_token };
  }

  private async discovery(login: LoginConfig, deadline: number): Promise<DiscoveryDocument> {
    const issuer = login.provider.replace(/\/+$/, '');
    const cached = this.discoveries.get(issuer);
    if (cached && this.now() - cached.at < DISCOVERY_TTL_MS) return cached.document;
    const answer = await this.fetch(`${issuer}/.well-known/openid-configuration`, { deadline });
    if (answer.status !== 200) throw new ProviderUnavailable(`its discovery document answered HTTP ${answer.status}`);
    const raw = jsonObject(answer, 'discovery');
    for (const field of ['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const) {
      if (typeof raw[field] !== 'string') throw new ProviderUnavailable(`its discovery document has no ${field}`);
    }
    if (String(raw.issuer).replace(/\/+$/, '') !== issuer) throw new ProviderUnavailable('its discovery document names another issuer');
    const document = raw as unknown as DiscoveryDocument;
    this.discoveries.set(issuer, { document, at: this.now() });
    return document;
  }

  /** The provider's JWKS, cached by jose and fetched again (at most every 30 s) for an unknown `kid`. */
  private keySet(jwksUri: string, deadline: number): JWTVerifyGetKey {
    let keys = this.keySets.get(jwksUri);
    if (!keys) {
      const fetch = this.fetch;
      keys = createRemoteJWKSet(new URL(jwksUri), {
        timeoutDuration: 4000,
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        [customFetch]: async (url: string) => {
          const answer = await fetch(url, { deadline });
          return new Response(new Uint8Array(answer.body), { status: answer.status });
        },
      });
      this.keySets.set(jwksUri, keys);
    }
    return keys;
  }

  private failure(login: LoginConfig, error: unknown): LoginAnswer {
    const provider = providerLabel(login);
    if (error instanceof LoginRefused) return refusal(`${provider} did not confirm who you are.`, error.message);
    const reason = error instanceof ProviderUnavailable ? error.message : 'unexpected failure';
    return page(502, 'Bad Gateway', `The identity provider ${provider} could not be reached or gave an unusable answer; try again later.`, ['Cache-Control', 'no-store'], { provider, reason });
  }

  private forgetExpired(nowSeconds: number): void {
    for (const [state, until] of this.consumed) {
      if (until > nowSeconds) break;
      this.consumed.delete(state);
    }
  }
}

function refusal(text: string, reason: string, headers: string[] = []): LoginAnswer {
  return page(403, 'Forbidden', `Login refused: ${text}`, [...headers, 'Cache-Control', 'no-store'], { provider: '', reason });
}

function page(status: number, title: string, text: string, headers: string[], problem?: LoginAnswer['problem']): LoginAnswer {
  return { status, headers: ['Content-Type', 'text/plain; charset=utf-8', ...headers], body: `${status} ${title}: ${text}\n`, ...(problem ? { problem } : {}) };
}

function random(): string {
  return randomBytes(32).toString('base64url');
}

/** A path on this host only: an absolute or protocol-relative URL would make the login an open redirect. */
export function safePath(path: string): string {
  return path.startsWith('/') && !path.startsWith('//') && !path.startsWith('/\\') && !/[\r\n]/.test(path) ? path : '/';
}

/** A provider's error code in a page: short, printable ASCII. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 64);
}
