// When to order a name's certificate again: renewal at two thirds of the lifetime (or
// ACME_RENEW_BEFORE ahead of expiry), and backoff after failures so a CA's rate limits hold.

/** The first retry waits a minute, each next one twice as long, at most a day. */
export const RETRY_FIRST_MS = 60_000;
export const RETRY_MAX_MS = 86_400_000;

/** When a certificate valid from `notBefore` to `notAfter` (Unix ms) is renewed. */
export function renewalTime(notBefore: number, notAfter: number, renewBeforeMs: number | undefined): number {
  const lifetime = Math.max(0, notAfter - notBefore);
  return renewBeforeMs === undefined ? notBefore + Math.floor((lifetime * 2) / 3) : Math.max(notBefore, notAfter - renewBeforeMs);
}

/** When to try again after the `failures`-th failure in a row (1 for the first). */
export function retryTime(nowMs: number, failures: number): number {
  return nowMs + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

/** The key a challenge is stored under: http-01 by its token, tls-alpn-01 by the name validated. */
export function challengeKey(type: 'http-01' | 'tls-alpn-01', tokenOrName: string): string {
  return type === 'http-01' ? `http:${tokenOrName}` : `alpn:${tokenOrName}`;
}
