import { timingSafeEqual } from 'node:crypto';
import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { formatTimestamp } from '../ids.js';
import { randomBytes } from '../random.js';
import { hashSecret, isWellFormedSecret, secretKsuid } from '../secrets.js';

export interface ConsoleSessionRecord {
  /** SHA-256 of the cookie value: the value itself is never stored. */
  readonly idHash: string;
  readonly apiKeyId: string;
  readonly csrfToken: string;
  readonly createdAt: string;
  readonly lastUsedMs: number;
}

export interface ActiveConsoleSession {
  readonly csrfToken: string;
  readonly lastUsedMs: number;
  readonly principal: Principal;
}

export interface ConsoleSessionRepository {
  insert(session: ConsoleSessionRecord): Promise<void>;
  /** The session and who its key speaks for, only while key, owner and account are all active. */
  findActive(idHash: string): Promise<ActiveConsoleSession | undefined>;
  touch(idHash: string, lastUsedMs: number): Promise<void>;
  delete(idHash: string): Promise<void>;
  deleteIdleSince(lastUsedMs: number): Promise<void>;
}

/** Checks an API key (the SPEC §2 errors when it is not a live one) and says who it is. */
export type KeyCheck = (apiKey: string) => Principal | Promise<Principal>;

export interface SignedIn {
  /** The cookie value. */
  readonly sessionId: string;
  readonly csrfToken: string;
  readonly principal: Principal;
}

/** The last-used time is written at most this often: not one write per console request. */
const TOUCH_EVERY_MS = 30_000;

/**
 * Console sign-in (CONSOLE.md §3): an API key is exchanged once for an opaque session id, kept
 * by the browser in an HttpOnly cookie. A session ends when idle for `idleMs`, when signed out,
 * or as soon as its API key (or the key's owner or account) is revoked, since every request
 * looks the key up again.
 */
export class ConsoleSessions {
  constructor(
    private readonly repository: ConsoleSessionRepository,
    private readonly checkKey: KeyCheck,
    private readonly idleMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  async signIn(apiKey: string): Promise<SignedIn> {
    if (!isWellFormedSecret(apiKey)) throw errors.authMalformedKey(apiKey.slice(0, Math.min(8, Math.floor(apiKey.length / 2))));
    const principal = await this.checkKey(apiKey);
    const now = this.nowMs();
    await this.repository.deleteIdleSince(now - this.idleMs);
    const sessionId = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(24).toString('base64url');
    await this.repository.insert({
      idHash: hashSecret(sessionId),
      apiKeyId: `ak_${secretKsuid(apiKey)}`,
      csrfToken,
      createdAt: formatTimestamp(Math.floor(now / 1000)),
      lastUsedMs: now,
    });
    return { sessionId, csrfToken, principal };
  }

  /**
   * The session's principal and CSRF token. `csrfHeader` is checked when `write` is true (any
   * method but GET and HEAD): a session alone never changes anything.
   */
  async authenticate(sessionId: string, write: boolean, csrfHeader: string | undefined): Promise<{ principal: Principal; csrfToken: string }> {
    const idHash = hashSecret(sessionId);
    const session = await this.repository.findActive(idHash);
    const now = this.nowMs();
    if (!session || now - session.lastUsedMs > this.idleMs) throw errors.consoleSessionEnded();
    if (write && !sameText(csrfHeader, session.csrfToken)) throw errors.consoleCsrfMissing();
    if (now - session.lastUsedMs > TOUCH_EVERY_MS) await this.repository.touch(idHash, now);
    return { principal: session.principal, csrfToken: session.csrfToken };
  }

  signOut(sessionId: string): Promise<void> {
    return this.repository.delete(hashSecret(sessionId));
  }
}

function sameText(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
