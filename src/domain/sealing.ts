// Secrets kept encrypted at rest (AES-256-GCM, a random 96-bit IV per value): the cluster CA's key,
// ACME account and certificate keys, edge login cookies. Pure: the caller brings the key.
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import { randomBytes } from './random.js';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The key is wrong, the context differs, or the value was altered: nothing can be said about which. */
export class UnsealError extends Error {
  constructor() {
    super('the value cannot be decrypted with this key');
    this.name = 'UnsealError';
  }
}

/** A 32-byte key for one purpose, derived from a longer-lived secret (HKDF-SHA256). */
export function sealingKey(secret: Uint8Array, purpose: string): Buffer {
  if (secret.length < 32) throw new RangeError('a sealing secret needs at least 32 bytes');
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `burrow sealing ${purpose}`, 32));
}

/**
 * `plaintext` encrypted and authenticated, as `v1.<iv>.<tag>.<ciphertext>` (base64url: it fits a
 * cookie). `context` (the row's name, say) is authenticated too: a sealed value copied to another
 * row does not open.
 */
export function seal(key: Buffer, plaintext: string, context: string): string {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** The plaintext of `sealed`; an UnsealError when the key or context differs, or the value was altered. */
export function unseal(key: Buffer, sealed: string, context: string): string {
  checkKey(key);
  const parts = sealedParts(sealed);
  if (!parts || parts.iv.length !== IV_BYTES || parts.tag.length !== TAG_BYTES) throw new UnsealError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, parts.iv);
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(parts.tag);
    return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new UnsealError();
  }
}

function checkKey(key: Buffer): void {
  if (key.length !== 32) throw new RangeError('the key must be 32 bytes');
}

function sealedParts(sealed: string): { iv: Buffer; tag: Buffer; ciphertext: Buffer } | undefined {
  // `v1:` + base64(iv | tag | ciphertext): how the cluster CA's key was stored before this module
  // served every sealed value; such rows still open.
  if (sealed.startsWith(`${VERSION}:`)) {
    const bytes = Buffer.from(sealed.slice(VERSION.length + 1), 'base64');
    return { iv: bytes.subarray(0, IV_BYTES), tag: bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES), ciphertext: bytes.subarray(IV_BYTES + TAG_BYTES) };
  }
  const [version, iv, tag, ciphertext, extra] = sealed.split('.');
  if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined || extra !== undefined) return undefined;
  return { iv: Buffer.from(iv, 'base64url'), tag: Buffer.from(tag, 'base64url'), ciphertext: Buffer.from(ciphertext, 'base64url') };
}
