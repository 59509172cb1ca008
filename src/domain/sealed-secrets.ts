// Secrets kept in the database encrypted at rest (the cluster CA's key; ACME account keys may
// share it): AES-256-GCM with a random 96-bit nonce per value, authenticated together with what
// the value is for, so a sealed value copied into another row does not open there.
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { randomBytes } from './random.js';

const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** The key is wrong, or the value was altered: nothing can be said about which. */
export class UnsealError extends Error {
  constructor() {
    super('the value cannot be decrypted with this key');
    this.name = 'UnsealError';
  }
}

/** `v1:` + base64(nonce | tag | ciphertext); `purpose` (say "cluster-ca") must be given again to open it. */
export function seal(key: Buffer, purpose: string, plaintext: string): string {
  if (key.length !== 32) throw new RangeError('the key must be 32 bytes');
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(purpose, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${VERSION}:${Buffer.concat([nonce, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

/** The plaintext of `sealed`; an UnsealError when the key or purpose differs or the value was altered. */
export function unseal(key: Buffer, purpose: string, sealed: string): string {
  if (key.length !== 32) throw new RangeError('the key must be 32 bytes');
  const bytes = sealed.startsWith(`${VERSION}:`) ? Buffer.from(sealed.slice(VERSION.length + 1), 'base64') : undefined;
  if (!bytes || bytes.length < NONCE_BYTES + TAG_BYTES) throw new UnsealError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(purpose, 'utf8'));
    decipher.setAuthTag(bytes.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new UnsealError();
  }
}
