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

/** What a rebind Token remembers: the hostname or TCP port its tunnel was bound to. */
export type RebindTarget = { readonly kind: 'hostname'; readonly hostname: string } | { readonly kind: 'tcp'; readonly port: number };

/**
 * The rebind Token of a tunnel: proves its id and names its target, so that a rebind whose
 * options name none (an agent that does not send back the answer's `Opts`) still gets its URL
 * back. `<proof of id and target>.<target, base64url>`.
 */
export function rebindToken(tokenHash: string, tunnelId: string, target: RebindTarget): string {
  const named = target.kind === 'tcp' ? `t:${target.port}` : `h:${target.hostname}`;
  return `${resumeProof(tokenHash, `${tunnelId}\n${named}`)}.${Buffer.from(named).toString('base64url')}`;
}

/** What a presented Token proves for `tunnelId`: its target (none for a bare proof), or undefined when it proves nothing. */
export function readRebindToken(tokenHash: string, tunnelId: string, presented: string): { target: RebindTarget | undefined } | undefined {
  const dot = presented.indexOf('.');
  if (dot === -1) return isResumeProof(tokenHash, tunnelId, presented) ? { target: undefined } : undefined;
  const named = Buffer.from(presented.slice(dot + 1), 'base64url').toString('utf8');
  if (!isResumeProof(tokenHash, `${tunnelId}\n${named}`, presented.slice(0, dot))) return undefined;
  if (named.startsWith('t:')) return { target: { kind: 'tcp', port: Number(named.slice(2)) } };
  return { target: { kind: 'hostname', hostname: named.slice(2) } };
}
