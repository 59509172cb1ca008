// Secrets kept in the database encrypted at rest (AES-256-GCM): ACME account and certificate keys
// today, the cluster CA's key with CLUSTER_SECRET later. Pure: the caller brings the secret.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/** A 32-byte key for one purpose, derived from a longer-lived secret (HKDF-SHA256). */
export function sealingKey(secret: Uint8Array, purpose: string): Buffer {
  if (secret.length < 32) throw new RangeError('a sealing secret needs at least 32 bytes');
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `burrow sealing ${purpose}`, 32));
}

/**
 * `plaintext` encrypted and authenticated, as `v1.<iv>.<tag>.<ciphertext>` (base64url). `context`
 * (the row's name, say) is authenticated too: a sealed value copied to another row does not open.
 */
export function seal(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** The plaintext of `sealed`; throws when it was sealed with another key or context, or altered. */
export function unseal(key: Buffer, sealed: string, context: string): string {
  const [version, iv, tag, ciphertext, extra] = sealed.split('.');
  if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined || extra !== undefined) throw new Error('not a sealed value');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
