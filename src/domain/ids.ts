import { randomBytes } from './random.js';

/**
 * KSUIDs (SPEC §1): 4-byte big-endian seconds since 1400000000, then 16 random bytes,
 * base62-encoded and left-padded to 27 characters. Lexical order is creation order.
 */
export const KSUID_EPOCH_SECONDS = 1_400_000_000;
export const KSUID_LENGTH = 27;
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export type IdPrefix = 'cr' | 'edgtls' | 'usr' | 'bot' | 'ak' | 'op' | 'acct' | 'ts' | 'tn' | 'ep' | 'bkdtg' | 'conn' | 'inst' | 'rd' | 'ra' | 'req';

const KSUID_PATTERN = /^[0-9A-Za-z]{27}$/;
/** The largest KSUID: 2^160 - 1 in base62. Anything above it does not decode to 20 bytes. */
const KSUID_MAX = 'aWgEPTl1tmebfsQzFP4bxwgy80V';

/**
 * Base62 of a big-endian byte string, left-padded to `length`. Long division over 32-bit words
 * (plain numbers, no BigInt): every request makes an id, so this is on the hot path.
 */
export function encodeBase62(bytes: Uint8Array, length: number): string {
  const words: number[] = [];
  for (let i = bytes.length; i > 0; i -= 4) {
    let word = 0;
    for (let j = Math.max(0, i - 4); j < i; j++) word = word * 256 + bytes[j]!;
    words.unshift(word);
  }
  const out: string[] = new Array<string>(length).fill('0');
  let position = length;
  let nonZero = words.some((word) => word !== 0);
  while (nonZero && position > 0) {
    let remainder = 0;
    nonZero = false;
    for (let i = 0; i < words.length; i++) {
      const value = remainder * 4294967296 + words[i]!;
      const quotient = Math.floor(value / 62);
      remainder = value - quotient * 62;
      words[i] = quotient;
      if (quotient !== 0) nonZero = true;
    }
    out[--position] = BASE62[remainder]!;
  }
  return out.join('');
}

export function isKsuid(text: string): boolean {
  return KSUID_PATTERN.test(text) && text <= KSUID_MAX;
}

/** Seconds since the Unix epoch encoded in a KSUID. */
export function ksuidSeconds(ksuid: string): number {
  let value = 0n;
  for (const char of ksuid) value = value * 62n + BigInt(BASE62.indexOf(char));
  return Number(value >> 128n) + KSUID_EPOCH_SECONDS;
}

/**
 * Makes strictly increasing KSUIDs within this process: when two are made in the same second
 * the random part of the previous one is incremented instead of drawn anew (SPEC §1).
 */
export class KsuidGenerator {
  private lastSeconds = -1;
  /** The last KSUID as base62 digit indexes: adding one to it is adding one to the number. */
  private readonly digits = new Uint8Array(KSUID_LENGTH);

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** Returns the id and the whole second it was made in (used as created_at). */
  next(): { ksuid: string; seconds: number } {
    const seconds = Math.floor(this.nowMs() / 1000);
    if (seconds > this.lastSeconds) {
      this.lastSeconds = seconds;
      const stamp = seconds - KSUID_EPOCH_SECONDS;
      const bytes = new Uint8Array(20);
      bytes[0] = (stamp >>> 24) & 0xff;
      bytes[1] = (stamp >>> 16) & 0xff;
      bytes[2] = (stamp >>> 8) & 0xff;
      bytes[3] = stamp & 0xff;
      bytes.set(randomBytes(16), 4);
      const text = encodeBase62(bytes, KSUID_LENGTH);
      for (let i = 0; i < KSUID_LENGTH; i++) this.digits[i] = BASE62.indexOf(text[i]!);
      return { ksuid: text, seconds };
    }
    // Same second (or the clock stepped back): the previous id plus one, so the order holds.
    // Working on the base62 digits directly spares a full encoding per id. Carrying into the
    // timestamp would take 2^128 ids in one second, and would still keep the order.
    for (let i = KSUID_LENGTH - 1; i >= 0; i--) {
      if (this.digits[i]! < 61) {
        this.digits[i]!++;
        break;
      }
      this.digits[i] = 0;
    }
    let text = '';
    for (let i = 0; i < KSUID_LENGTH; i++) text += BASE62[this.digits[i]!];
    return { ksuid: text, seconds: this.lastSeconds };
  }
}

const sharedGenerator = new KsuidGenerator();

/** An id alone, when no created_at is needed (operation ids: one per request). */
export function newBareId(prefix: IdPrefix): string {
  return `${prefix}_${sharedGenerator.next().ksuid}`;
}

export function newId(prefix: IdPrefix, generator: KsuidGenerator = sharedGenerator): { id: string; createdAt: string } {
  const { ksuid, seconds } = generator.next();
  return { id: `${prefix}_${ksuid}`, createdAt: formatTimestamp(seconds) };
}

let lastFormatted = { seconds: -1, text: '' };

/** RFC 3339, UTC, whole seconds, `Z` suffix (SPEC §1). Remembers the last second it formatted. */
export function formatTimestamp(seconds: number): string {
  if (lastFormatted.seconds !== seconds) {
    lastFormatted = { seconds, text: new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z' };
  }
  return lastFormatted.text;
}

/**
 * True when `id` is `<prefix>_<27 base62>` for one of the given prefixes: the shape of SPEC §1,
 * not the numeric range of a KSUID, since a key made from a BOOTSTRAP_API_KEY takes its id from
 * the key's first 27 characters (any well-formed key, SPEC §4), and a `before_id` beyond every id
 * just means "from the start".
 */
export function isIdOf(id: string, ...prefixes: IdPrefix[]): boolean {
  const underscore = id.indexOf('_');
  if (underscore < 0) return false;
  const prefix = id.slice(0, underscore) as IdPrefix;
  return prefixes.includes(prefix) && KSUID_PATTERN.test(id.slice(underscore + 1));
}
