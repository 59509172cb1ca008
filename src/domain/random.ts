import { randomFillSync } from 'node:crypto';

/**
 * Bytes from the OS CSPRNG, drawn 4 KiB at a time: one call per id or token would cost a
 * system call each. Every byte is handed out once and never reused.
 */
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

export function randomBytes(length: number): Buffer {
  if (length > POOL_SIZE) return randomFillSync(Buffer.alloc(length));
  if (offset + length > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + length));
  offset += length;
  return bytes;
}
