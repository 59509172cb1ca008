import { randomBytes } from '../random.js';

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Lower-case letters and digits from the CSPRNG, for generated hostnames (DNS is case-blind). */
export function randomBase36(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 252 = 36 * 7: rejecting the rest keeps every character equally likely.
      if (byte < 252) out += BASE36[byte % 36];
      if (out.length === length) break;
    }
  }
  return out;
}
