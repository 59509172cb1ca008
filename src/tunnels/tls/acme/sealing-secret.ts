// The secret that seals ACME keys in the database: TLS_DIR/sealing.key (32 random bytes, hex,
// mode 0600), made on first start. Instances that share a database must share this file.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { TlsConfigError } from '../errors.js';
import { PRIVATE_MODE, makeDirectories, publishExclusive, readIfExists } from '../files.js';

export const SEALING_SECRET_FILE = 'sealing.key';

export async function loadOrCreateSealingSecret(tlsDir: string): Promise<Buffer> {
  const path = join(tlsDir, SEALING_SECRET_FILE);
  try {
    await makeDirectories(tlsDir, 0o700);
    // two first starts at once: one file wins, both read it
    if ((await readIfExists(path)) === undefined) await publishExclusive(path, `${randomBytes(32).toString('hex')}\n`, PRIVATE_MODE);
    const text = (await readIfExists(path))?.trim() ?? '';
    if (!/^[0-9a-f]{64,}$/.test(text)) throw new TlsConfigError(`${path} is not a sealing secret (64 or more hex digits); restore it, or delete it to start over (stored ACME keys are then unreadable and reordered)`);
    return Buffer.from(text, 'hex');
  } catch (err) {
    if (err instanceof TlsConfigError) throw err;
    throw new TlsConfigError(`cannot read or create ${path}: ${(err as Error).message}`, { cause: err });
  }
}
