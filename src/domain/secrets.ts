import { hash, timingSafeEqual } from 'node:crypto';
import { randomBytes } from './random.js';
import { BASE62, isKsuid } from './ids.js';

/**
 * API keys and tunnel authtokens share one shape (SPEC §4, §5.2):
 * `<27-char KSUID of the resource id>_<21 base62 chars from a CSPRNG>`.
 * Only the SHA-256 of the whole secret is stored; the KSUID half names the row to look up.
 */
export const SECRET_RANDOM_LENGTH = 21;
const SECRET_SHAPE = /^[0-9A-Za-z]{27}_[0-9A-Za-z]{20,22}$/;

export function randomBase62(length: number): string {
  return randomFrom(BASE62, length);
}

/** `length` characters of `alphabet` from the CSPRNG, each equally likely. */
export function randomFrom(alphabet: string, length: number): string {
  // Bytes at or above the largest multiple of the alphabet's size are rejected (no modulo bias).
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Makes the secret for the resource whose id is `<prefix>_<ksuid>`. */
export function newSecretFor(id: string): string {
  const ksuid = id.slice(id.indexOf('_') + 1);
  return `${ksuid}_${randomBase62(SECRET_RANDOM_LENGTH)}`;
}

/** A secret's shape anywhere in a text (not inside a longer run of letters and digits). */
const SECRET_IN_TEXT = /(?<![0-9A-Za-z])([0-9A-Za-z]{8})[0-9A-Za-z]{19}_[0-9A-Za-z]{20,22}(?![0-9A-Za-z])/g;

/**
 * `text` with anything shaped like an API key or authtoken cut to its first 8 characters and "…"
 * (SPEC §8: secrets never reach an error message, even when the client put one where an id or a
 * field name goes).
 */
export function redactSecrets(text: string): string {
  return text.includes('_') ? text.replace(SECRET_IN_TEXT, '$1…') : text;
}

/** The shape SPEC §2 checks before any lookup (ERR_NGROK_202 when it fails). */
export function isWellFormedSecret(secret: string): boolean {
  return SECRET_SHAPE.test(secret);
}

/** The KSUID half of a well-formed secret: it is the id of the key or credential it belongs to. */
const AUTHTOKEN_SHAPE = /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/;

/**
 * An agent authtoken's form exactly (SPEC §5.2): a valid KSUID, `_`, 21 base62 characters. Anything
 * else is ERR_NGROK_105 ("does not look like"), not 107 (TUNNELS.md §2).
 */
export function isWellFormedAuthtoken(token: string): boolean {
  return AUTHTOKEN_SHAPE.test(token) && isKsuid(token.slice(0, 27));
}

export function secretKsuid(secret: string): string {
  return secret.slice(0, 27);
}

export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** Compares a presented secret with a stored SHA-256 digest in constant time. */
export function secretMatchesDigest(secret: string, digest: Buffer): boolean {
  const presented = hash('sha256', secret, 'buffer');
  return presented.length === digest.length && timingSafeEqual(presented, digest);
}

/** Compares a presented secret with a stored hex hash in constant time. */
export function secretMatchesHash(secret: string, storedHash: string): boolean {
  return secretMatchesDigest(secret, Buffer.from(storedHash, 'hex'));
}

/** At most 8 characters of a secret, for messages and listings that help a caller recognise it. */
export function secretDisplayPrefix(secret: string): string {
  return secret.slice(0, 8);
}
