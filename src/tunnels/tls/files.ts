// File helpers for key material: private files are created with mode 0600 from the first byte
// (never written world-readable and chmod-ed afterwards), and published atomically.
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { TlsConfigError, describeFsError } from './errors.js';

export const PRIVATE_MODE = 0o600;
export const PUBLIC_MODE = 0o644;

/**
 * mkdir -p with `mode` on each directory it makes, one level at a time: Node's recursive mkdir
 * never returns on some paths (under /proc it retries forever, at full CPU). Returns whether the
 * last level was made here.
 */
export async function makeDirectories(directory: string, mode: number): Promise<boolean> {
  if (await stat(directory).then(() => true, () => false)) return false;
  const parent = dirname(directory);
  if (parent !== directory) await makeDirectories(parent, mode);
  try {
    await mkdir(directory, { mode });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

async function writeNew(path: string, data: string, mode: number): Promise<void> {
  const handle = await open(path, 'wx', mode);
  try {
    await handle.writeFile(data);
    await handle.chmod(mode); // the umask may have removed bits from a 0644 file
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Creates `path` with `data` only if it does not exist yet, atomically: the content is written to
 * a temporary file which is then hard-linked to `path` (link fails with EEXIST rather than
 * replacing). Returns false when `path` already existed (someone else won the race).
 * On a file system without hard links, falls back to an exclusive create (not atomic for readers).
 */
export async function publishExclusive(path: string, data: string, mode: number): Promise<boolean> {
  const temp = tempPathFor(path);
  await writeNew(temp, data, mode);
  try {
    await link(temp, path);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS' || code === 'EXDEV') {
      try {
        await writeNew(path, data, mode);
        return true;
      } catch (err2) {
        if ((err2 as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw err2;
      }
    }
    throw err;
  } finally {
    await unlink(temp).catch(() => {});
  }
}

/** Writes `path` atomically, replacing any previous content (temp file + rename). */
export async function replaceAtomically(path: string, data: string, mode: number): Promise<void> {
  const temp = tempPathFor(path);
  try {
    await writeNew(temp, data, mode);
    await rename(temp, path);
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
}

/** The file's text, or undefined when it does not exist. Other errors are thrown as they are. */
export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Reads a file given by the operator; errors name the variable (`label`) and the path. */
export async function readConfigured(label: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new TlsConfigError(`${label}: cannot read ${path}: ${describeFsError(err)}`, { cause: err });
  }
}
