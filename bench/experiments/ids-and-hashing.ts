import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { BASE62, encodeBase62, formatTimestamp, KSUID_LENGTH, newId } from '../../src/domain/ids.js';
import { hashSecret, newSecretFor, secretMatchesHash } from '../../src/domain/secrets.js';
import { generateApiKey } from '../../test/helpers/server-process.js';
import { compare } from './measure.js';

/**
 * Per-request costs outside the database, and cheaper equivalents:
 *   - the operation id of every request (server/app.ts genReqId → domain/ids.ts newId): a
 *     BigInt base62 encoding plus a Date formatted into createdAt that genReqId throws away;
 *   - the API key check of every request (domain/auth.ts → secrets.ts secretMatchesHash):
 *     createHash().update().digest('hex'), then two Buffer.from(hex) and timingSafeEqual;
 *   - a new credential's token and its hash (create only).
 *
 *   node --import tsx bench/experiments/ids-and-hashing.ts
 */

/**
 * base62 of 20 bytes without BigInt: ten 16-bit limbs, divided by 62^5 per pass (remainders stay
 * below 2^46, exact in doubles), so six passes of ten divisions give five digits each.
 */
const BASE62_POW5 = 62 ** 5;
function encodeBase62Fast(bytes: Uint8Array, length: number): string {
  const limbs = new Array<number>(10);
  for (let i = 0; i < 10; i++) limbs[i] = (bytes[2 * i]! << 8) | bytes[2 * i + 1]!;
  let out = '';
  while (out.length < length) {
    let remainder = 0;
    for (let i = 0; i < 10; i++) {
      const accumulator = remainder * 65536 + limbs[i]!;
      const quotient = Math.floor(accumulator / BASE62_POW5);
      limbs[i] = quotient;
      remainder = accumulator - quotient * BASE62_POW5;
    }
    for (let digit = 0; digit < 5; digit++) {
      out = BASE62[remainder % 62]! + out;
      remainder = Math.floor(remainder / 62);
    }
  }
  return out.slice(out.length - length);
}

// Same output as the current encoder, on random and edge-case inputs.
for (let i = 0; i < 20_000; i++) {
  const bytes = i === 0 ? new Uint8Array(20).fill(255) : i === 1 ? new Uint8Array(20) : randomBytes(20);
  if (encodeBase62Fast(bytes, KSUID_LENGTH) !== encodeBase62(bytes, KSUID_LENGTH)) throw new Error(`mismatch on ${Buffer.from(bytes).toString('hex')}`);
}

let lastSecond = -1;
let lastStamp = '';
/** formatTimestamp, computed once per second. */
function cachedTimestamp(seconds: number): string {
  if (seconds !== lastSecond) {
    lastSecond = seconds;
    lastStamp = formatTimestamp(seconds);
  }
  return lastStamp;
}

const sample = randomBytes(20);
await compare('operation id (runs on every request)', [
  { name: "newId('op') as genReqId calls it", run: () => newId('op').id },
  { name: 'encodeBase62 (BigInt) alone', run: () => encodeBase62(sample, KSUID_LENGTH) },
  { name: 'formatTimestamp (Date#toISOString) alone', run: () => formatTimestamp(Math.floor(Date.now() / 1000)) },
  { name: 'encodeBase62Fast (16-bit limbs ÷ 62^5, same output)', run: () => encodeBase62Fast(sample, KSUID_LENGTH) },
  { name: 'formatTimestamp cached per second', run: () => cachedTimestamp(Math.floor(Date.now() / 1000)) },
], 100_000);

const secret = generateApiKey();
const storedHex = hashSecret(secret);
const storedBuffer = Buffer.from(storedHex, 'hex');
await compare('API key check (runs on every request)', [
  { name: 'secretMatchesHash (createHash → hex → Buffer.from ×2)', run: () => secretMatchesHash(secret, storedHex) },
  { name: "crypto.hash('sha256', s, 'buffer') vs Buffer kept in the cache", run: () => timingSafeEqual(hash('sha256', secret, 'buffer'), storedBuffer) },
  { name: "createHash().digest() (no hex) vs Buffer kept in the cache", run: () => timingSafeEqual(createHash('sha256').update(secret).digest(), storedBuffer) },
], 100_000);

await compare('new credential: id, token, token hash (create only)', [
  { name: "newId('cr') + newSecretFor + hashSecret", run: () => hashSecret(newSecretFor(newId('cr').id)) },
  { name: 'newSecretFor alone (randomBytes(42) per token)', run: () => newSecretFor('cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ') },
  { name: 'hashSecret alone', run: () => hashSecret(secret) },
], 50_000);
