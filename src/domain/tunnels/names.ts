import { randomFrom } from '../secrets.js';

/** Lower-case letters and digits from the CSPRNG, for generated hostnames (DNS is case-blind). */
export function randomBase36(length: number): string {
  return randomFrom('0123456789abcdefghijklmnopqrstuvwxyz', length);
}
