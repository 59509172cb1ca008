import type { ApiKeyLookup, Principal } from './accounts/types.js';
import type { CredentialRepository } from './credentials/types.js';
import { errors } from './errors.js';
import { isWellFormedSecret, secretKsuid, secretMatchesDigest, secretMatchesHash } from './secrets.js';

/**
 * How long a verified key is trusted without asking the database again. SPEC §4: a revoked key
 * must stop working within one second on every instance; the margin covers clock granularity.
 */
export const KEY_CACHE_TTL_MS = 900;
const KEY_CACHE_MAX_ENTRIES = 10_000;

interface CachedKey {
  readonly digest: Buffer;
  readonly principal: Principal;
  readonly expiresAt: number;
}

/** Turns an Authorization header into the calling principal, or the SPEC §2 error for it. */
export class Authenticator {
  private readonly cache = new Map<string, CachedKey>();

  constructor(
    private readonly keys: ApiKeyLookup,
    private readonly credentials: Pick<CredentialRepository, 'tokenHash'>,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * Synchronous when the key is cached (most requests), so the common path allocates no promise;
   * throws (or rejects) with the SPEC §2 error otherwise.
   */
  authenticate(header: string | undefined): Principal | Promise<Principal> {
    if (header === undefined) throw errors.authMissing();
    const secret = bearerValue(header);
    if (secret === undefined) throw errors.authNotBearer();
    if (!isWellFormedSecret(secret)) throw errors.authMalformedKey(shownPrefix(secret));

    const keyId = `ak_${secretKsuid(secret)}`;
    const entry = this.cache.get(keyId);
    if (entry && entry.expiresAt > this.nowMs()) return this.verify(secret, entry);
    return this.lookUp(secret, keyId);
  }

  private async lookUp(secret: string, keyId: string): Promise<Principal> {
    this.cache.delete(keyId);
    const found = await this.keys.findActiveKey(keyId);
    if (!found) return this.refuse(secret);
    const entry = { digest: Buffer.from(found.secretHash, 'hex'), principal: found.principal, expiresAt: this.nowMs() + KEY_CACHE_TTL_MS };
    if (this.cache.size >= KEY_CACHE_MAX_ENTRIES) this.cache.clear();
    this.cache.set(keyId, entry);
    return this.verify(secret, entry);
  }

  private verify(secret: string, entry: CachedKey): Principal | Promise<never> {
    return secretMatchesDigest(secret, entry.digest) ? entry.principal : this.refuse(secret);
  }

  /** Not an API key: say so precisely when it is a live tunnel authtoken being misused. */
  private async refuse(secret: string): Promise<never> {
    const tokenHash = await this.credentials.tokenHash(`cr_${secretKsuid(secret)}`);
    if (tokenHash !== undefined && secretMatchesHash(secret, tokenHash)) throw errors.authTunnelToken(shownPrefix(secret));
    throw errors.authUnknownKey(shownPrefix(secret));
  }
}

/** The value of a `Bearer` Authorization header (scheme case-insensitive), or undefined. */
function bearerValue(header: string): string | undefined {
  const match = /^bearer +(\S+) *$/i.exec(header);
  return match?.[1];
}

/** Never echo a secret in full: at most 8 characters, and at most half of a short value. */
function shownPrefix(value: string): string {
  return value.slice(0, Math.min(8, Math.floor(value.length / 2)));
}
