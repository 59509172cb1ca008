import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The session Cookie and the rebind Token (TUNNELS.md §2): an HMAC keyed with the credential's
 * token hash, so they survive a restart, prove the agent held that credential, and reveal
 * nothing. A reconnect with a matching Cookie keeps its session id; a rebind with a matching
 * Token keeps its tunnel id.
 */
export function resumeProof(tokenHash: string, subject: string): string {
  return createHmac('sha256', tokenHash).update(subject).digest('base64url').slice(0, 32);
}

export function isResumeProof(tokenHash: string, subject: string, presented: string): boolean {
  const expected = Buffer.from(resumeProof(tokenHash, subject));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
