/**
 * The edge login's cookies (IDENTITY.md §1): the session, and the login under way (state, nonce,
 * PKCE verifier). Both are sealed with AES-256-GCM (sealing.ts) under a key derived from TLS_DIR's
 * sealing secret, so instances sharing it read each other's; the cookie's name and host are
 * authenticated with it, so a cookie copied to another endpoint or login does not open.
 * Synchronous, so that the request path checks a session without waiting.
 */
import { randomBytes } from 'node:crypto';
import { seal, sealingKey, unseal } from '../sealing.js';
import type { LoginConfig } from './login-config.js';

export interface EdgeIdentity {
  /** burrow's id of the identity: stable per provider and user. */
  readonly id: string;
  readonly email: string;
  readonly name: string;
  readonly providerUserId: string;
}

export interface EdgeSession extends EdgeIdentity {
  readonly sessionId: string;
  /** Seconds since the epoch: when the login happened, and when the session was last seen in use. */
  readonly createdAt: number;
  readonly activeAt: number;
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
  | { ok: true; session: EdgeSession; expiresAt: number; /** A renewed cookie (Set-Cookie value) when the idle clock was moved. */ renewed: string | undefined }
  | { ok: false; timedOut: boolean; maxReached: boolean };

/** A login started must come back within this. */
export const LOGIN_WINDOW_SECONDS = 600;
/** The idle clock moves at most once a minute (each move is a Set-Cookie). */
const RENEW_AFTER_SECONDS = 60;

export function sessionCookieName(login: LoginConfig): string {
  return `ngrok_session_${login.key}`;
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
    return seal(this.key, JSON.stringify(session), `session\n${host}\n${sessionCookieName(login)}`);
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
    const value = readCookie(cookieHeaders, sessionCookieName(login));
    if (value === undefined) return { ok: false, timedOut: false, maxReached: false };
    const session = this.open<EdgeSession>(value, `session\n${host}\n${sessionCookieName(login)}`);
    if (!session || typeof session.createdAt !== 'number' || typeof session.activeAt !== 'number') return { ok: false, timedOut: false, maxReached: false };
    const expiresAt = session.createdAt + login.maxSeconds;
    if (nowSeconds >= expiresAt) return { ok: false, timedOut: false, maxReached: true };
    if (nowSeconds - session.activeAt >= login.idleSeconds) return { ok: false, timedOut: true, maxReached: false };
    let renewed: string | undefined;
    if (nowSeconds - session.activeAt >= RENEW_AFTER_SECONDS) {
      const moved = { ...session, activeAt: nowSeconds };
      renewed = setCookie(sessionCookieName(login), this.sealSession(host, login, moved), expiresAt - nowSeconds, secure);
    }
    return { ok: true, session, expiresAt, renewed };
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

export function newSessionId(): string {
  return randomBytes(16).toString('base64url');
}

/** A Set-Cookie value: host-only (no Domain), whole host (Path=/), HttpOnly, SameSite=Lax, Secure on HTTPS. */
export function setCookie(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

export function clearCookie(name: string, secure: boolean): string {
  return setCookie(name, '', 0, secure);
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
