import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { newId } from '../ids.js';

/** How long a replay's token may be claimed after it is made. */
export const REPLAY_CLAIM_MS = 30_000;
/** Ids claimed here, remembered so a token is claimed once (a bound: older ones have expired). */
const MAX_CLAIMED = 1000;

/**
 * The `Burrow-Replay` header's value: `<request id>.<expiry>.<MAC>`, the MAC over the id, the
 * endpoint and the expiry. Any instance holding the key verifies it without asking the one that
 * made it, so a replay sent by one instance is recorded under its id by whichever instance's proxy
 * carries it (forwarding between instances). The key comes from CLUSTER_SECRET, which every
 * instance of a cluster shares; without one it is this process's own.
 */
export class ReplayTokens {
  private readonly key: Buffer;
  private readonly claimed = new Set<string>();

  constructor(clusterSecret: Buffer | undefined) {
    this.key = clusterSecret ? createHmac('sha256', clusterSecret).update('burrow replay tokens').digest() : randomBytes(32);
  }

  issue(endpointId: string, nowMs: number): { token: string; id: string } {
    const { id } = newId('req');
    const expires = (nowMs + REPLAY_CLAIM_MS).toString(36);
    return { token: `${id}.${expires}.${this.mac(id, endpointId, expires)}`, id };
  }

  /** The id to record the request under; undefined for a forged, altered, expired or already claimed token, or another endpoint's. */
  claim(token: string, endpointId: string, nowMs: number): string | undefined {
    const [id, expires, mac, extra] = token.split('.');
    if (id === undefined || expires === undefined || mac === undefined || extra !== undefined) return undefined;
    const expected = Buffer.from(this.mac(id, endpointId, expires));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    if (!(parseInt(expires, 36) > nowMs) || this.claimed.has(id)) return undefined;
    if (this.claimed.size >= MAX_CLAIMED) this.claimed.delete(this.claimed.values().next().value!);
    this.claimed.add(id);
    return id;
  }

  private mac(id: string, endpointId: string, expires: string): string {
    return createHmac('sha256', this.key).update(`${id}\n${endpointId}\n${expires}`).digest('base64url');
  }
}
