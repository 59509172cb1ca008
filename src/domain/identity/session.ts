/**
 * The edge login's cookies (IDENTITY.md §1): the session, and the login under way (state, nonce,
 * PKCE verifier). Both are sealed with AES-256-GCM (sealing.ts) under a key derived from TLS_DIR's
 * sealing secret, so instances sharing it read each other's; the cookie's name and host are
 * authenticated with it, so a cookie copied to another endpoint or login does not open.
 * Synchronous, so that the request path checks a session without waiting.
 */
import { randomBytes } from 'node:crypto';
import { seal, sealingKey, unseal } from '../sealing.js';
import { withinCookieDomain, type LoginConfig } from './login-config.js';

export interface EdgeIdentity {
  /** burrow's id of the identity: stable per provider and user. */
  readonly id: string;
  readonly email: string;
  readonly name: string;
  readonly providerUserId: string;
}

/** The provider's tokens (`""` when it gave none): secrets, kept only in the sealed session. */
export interface ProviderTokens {
  readonly idToken: string;
  readonly accessToken: string;
  readonly refreshToken: string;
}

export interface EdgeSession extends EdgeIdentity, Partial<ProviderTokens> {
  readonly sessionId: string;
  /** Seconds since the epoch: when the login happened, and when the session was last seen in use. */
  readonly createdAt: number;
  readonly activeAt: number;
  /** When the identity was read from the provider (at the login, then at each refresh); absent: createdAt. */
  readonly identityAt?: number;
  /** Set by a refresh, for the one request that follows it (its `userinfo_refreshed`). */
  readonly refreshed?: boolean;
}

export interface PendingLogin {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly redirectPath: string;
  readonly createdAt: number;
}

/** What a request's cookie says for one login action. */
export type SessionLookup =
  | {
      ok: true;
      session: EdgeSession;
      expiresAt: number;
      /** The renewed cookie's Set-Cookie values when the idle clock was moved (else none). */
      renewed: string[];
      /** userinfo_refresh_interval has passed since the identity was read: it is read again before the request goes on. */
      stale: boolean;
    }
  | { ok: false; timedOut: boolean; maxReached: boolean };

/** A login started must come back within this. */
export const LOGIN_WINDOW_SECONDS = 600;
/** The idle clock moves at most once a minute (each move is a Set-Cookie). */
const RENEW_AFTER_SECONDS = 60;
/**
 * A sealed session longer than this is split over `<name>.0`, `<name>.1`, … (oauth2-proxy's
 * scheme, with a dot): browsers refuse a cookie over 4096 bytes, name and attributes included.
 */
const PIECE_CHARS = 3800;
/** At most this many pieces (the request head stays far below Node's 16 KiB); tokens that do not fit are not kept. */
const MAX_PIECES = 3;

export function sessionCookieName(login: LoginConfig): string {
  return `ngrok_session_${login.key}`;
}

/**
 * A piece of a split session. A login's key never holds a dot, so no piece is another login's
 * cookie or piece (with `_<i>`, login `a`'s first piece would be login `a_0`'s cookie).
 */
function pieceName(name: string, index: number): string {
  return `${name}.${index}`;
}

export function pendingCookieName(login: LoginConfig): string {
  return `ngrok_login_${login.key}`;
}

export class SessionCodec {
  private readonly key: Buffer;

  constructor(secret: Uint8Array) {
    this.key = sealingKey(secret, 'edge login sessions');
  }

  sealSession(host: string, login: LoginConfig, session: EdgeSession): string {
    return seal(this.key, JSON.stringify(session), sessionContext(host, login));
  }

  /**
   * The Set-Cookie values that give the browser `session`: one cookie, or its pieces, and the
   * clearing of any other piece the request carried (`cookieHeaders`), so none is left over.
   * Tokens are dropped (refresh, then ID, then access token) when the whole would not fit.
   */
  sessionCookies(host: string, login: LoginConfig, session: EdgeSession, maxAgeSeconds: number, secure: boolean, cookieHeaders: readonly string[]): string[] {
    const name = sessionCookieName(login);
    let sealed = this.sealSession(host, login, session);
    for (const drop of ['refreshToken', 'idToken', 'accessToken'] as const) {
      if (sealed.length <= PIECE_CHARS * MAX_PIECES) break;
      session = { ...session, [drop]: '' };
      sealed = this.sealSession(host, login, session);
    }
    const pieces = sealed.length <= PIECE_CHARS ? [sealed] : Array.from({ length: Math.ceil(sealed.length / PIECE_CHARS) }, (_, i) => sealed.slice(i * PIECE_CHARS, (i + 1) * PIECE_CHARS));
    const names = pieces.length === 1 ? [name] : pieces.map((_, i) => pieceName(name, i));
    const domain = cookieDomainFor(login, host);
    const out = pieces.map((piece, i) => setCookie(names[i]!, piece, maxAgeSeconds, secure, domain));
    for (const present of sessionCookieNames(cookieHeaders, login)) if (!names.includes(present)) out.push(clearCookie(present, secure, domain));
    return out;
  }

  sealPending(host: string, login: LoginConfig, pending: PendingLogin): string {
    return seal(this.key, JSON.stringify(pending), `pending\n${host}\n${pendingCookieName(login)}`);
  }

  openPending(host: string, login: LoginConfig, value: string, nowSeconds: number): PendingLogin | undefined {
    const pending = this.open<PendingLogin>(value, `pending\n${host}\n${pendingCookieName(login)}`);
    if (!pending || typeof pending.state !== 'string' || typeof pending.verifier !== 'string' || typeof pending.nonce !== 'string') return undefined;
    if (typeof pending.createdAt !== 'number' || nowSeconds - pending.createdAt > LOGIN_WINDOW_SECONDS) return undefined;
    return pending;
  }

  /** The session a request carries for `login` on `host`, checked against its idle and total lifetimes. */
  lookup(login: LoginConfig, host: string, cookieHeaders: readonly string[], nowSeconds: number, secure: boolean): SessionLookup {
    const value = readSessionValue(cookieHeaders, login);
    if (value === undefined) return { ok: false, timedOut: false, maxReached: false };
    const session = this.open<EdgeSession>(value, sessionContext(host, login));
    if (!session || typeof session.createdAt !== 'number' || typeof session.activeAt !== 'number') return { ok: false, timedOut: false, maxReached: false };
    const expiresAt = session.createdAt + login.maxSeconds;
    if (nowSeconds >= expiresAt) return { ok: false, timedOut: false, maxReached: true };
    if (nowSeconds - session.activeAt >= login.idleSeconds) return { ok: false, timedOut: true, maxReached: false };
    const stale = login.refreshSeconds !== undefined && nowSeconds - (session.identityAt ?? session.createdAt) >= login.refreshSeconds;
    let renewed: string[] = [];
    // a refresh's mark is for one request: the cookie goes back without it
    if (!stale && (session.refreshed || nowSeconds - session.activeAt >= RENEW_AFTER_SECONDS)) {
      const { refreshed: _, ...moved } = { ...session, activeAt: nowSeconds };
      renewed = this.sessionCookies(host, login, moved, expiresAt - nowSeconds, secure, cookieHeaders);
    }
    return { ok: true, session, expiresAt, renewed, stale };
  }

  private open<T>(value: string, context: string): T | undefined {
    try {
      const parsed: unknown = JSON.parse(unseal(this.key, value, context));
      return typeof parsed === 'object' && parsed !== null ? (parsed as T) : undefined;
    } catch {
      return undefined;
    }
  }
}

/**
 * What a session is sealed to: the endpoint's host, or the login's auth_cookie_domain when the host
 * is within it (the cookie then opens on every host of that domain with the same login).
 */
function sessionContext(host: string, login: LoginConfig): string {
  return `session\n${cookieDomainFor(login, host) ?? host}\n${sessionCookieName(login)}`;
}

/** The session cookie's Domain on `host`: auth_cookie_domain when the host is within it, else none (host-only). */
export function cookieDomainFor(login: LoginConfig, host: string): string | undefined {
  return login.cookieDomain !== undefined && withinCookieDomain(host, login.cookieDomain) ? login.cookieDomain : undefined;
}

export function newSessionId(): string {
  return randomBytes(16).toString('base64url');
}

/** A Set-Cookie value: host-only unless a `domain` is given, whole host (Path=/), HttpOnly, SameSite=Lax, Secure on HTTPS. */
export function setCookie(name: string, value: string, maxAgeSeconds: number, secure: boolean, domain?: string): string {
  return `${name}=${value}; Path=/${domain ? `; Domain=${domain}` : ''}; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** A browser clears a cookie only when Domain (and Path) are those it was set with. */
export function clearCookie(name: string, secure: boolean, domain?: string): string {
  return setCookie(name, '', 0, secure, domain);
}

/** The session's sealed value: its one cookie, or its pieces `.0`, `.1`, … joined. */
function readSessionValue(cookieHeaders: readonly string[], login: LoginConfig): string | undefined {
  const name = sessionCookieName(login);
  const whole = readCookie(cookieHeaders, name);
  if (whole !== undefined) return whole;
  let joined: string | undefined;
  for (let i = 0; i < MAX_PIECES; i++) {
    const piece = readCookie(cookieHeaders, pieceName(name, i));
    if (piece === undefined) break;
    joined = (joined ?? '') + piece;
  }
  return joined;
}

/** The names of the session's cookie and pieces a request carries. */
export function sessionCookieNames(cookieHeaders: readonly string[], login: LoginConfig): string[] {
  const name = sessionCookieName(login);
  const found = new Set<string>();
  for (const header of cookieHeaders) {
    for (const part of header.split(';')) {
      const eq = part.indexOf('=');
      const present = (eq === -1 ? part : part.slice(0, eq)).trim();
      if (present === name || (present.startsWith(`${name}.`) && /^\d{1,2}$/.test(present.slice(name.length + 1)))) found.add(present);
    }
  }
  return [...found];
}

/** Set-Cookie values clearing the session on `host`: its cookie and every piece the request carried. */
export function clearSessionCookies(login: LoginConfig, host: string, cookieHeaders: readonly string[], secure: boolean): string[] {
  const names = new Set([sessionCookieName(login), ...sessionCookieNames(cookieHeaders, login)]);
  const domain = cookieDomainFor(login, host);
  return [...names].map((name) => clearCookie(name, secure, domain));
}

/** A cookie's value from Cookie header values (the first of that name: browsers send the most specific first). */
export function readCookie(cookieHeaders: readonly string[], name: string): string | undefined {
  let found: string | undefined;
  for (const header of cookieHeaders) {
    for (const part of header.split(';')) {
      const eq = part.indexOf('=');
      if (eq === -1) continue;
      if (part.slice(0, eq).trim() === name && found === undefined) found = part.slice(eq + 1).trim();
    }
  }
  return found;
}

/** burrow's own cookies on an endpoint with a login action: sessions (and their pieces), logins under way. */
export function isLoginCookie(name: string): boolean {
  return name.startsWith('ngrok_session_') || name.startsWith('ngrok_login_');
}

/**
 * Header lines (name, value, …) as they go to the agent: burrow's own cookies taken out of each
 * Cookie line, the others kept byte for byte; a Cookie line left empty is dropped. The agent has no
 * use for a sealed session, and it would hand it to whatever the agent's server trusts with cookies.
 */
export function withoutLoginCookies(headers: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (name.length !== 6 || name.toLowerCase() !== 'cookie') {
      out.push(name, value);
      continue;
    }
    const kept = value.split(';').filter((part) => {
      const eq = part.indexOf('=');
      return !isLoginCookie((eq === -1 ? part : part.slice(0, eq)).trim());
    });
    if (kept.length === value.split(';').length) out.push(name, value);
    else if (kept.join('').trim() !== '') out.push(name, kept.join(';').replace(/^[ \t]+/, ''));
  }
  return out;
}

/** The host a session is bound to: the Host header's, lower-case, without the port. */
export function loginHost(hostHeader: string): string {
  const host = hostHeader.trim().toLowerCase();
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}
