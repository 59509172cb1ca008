// A data-plane instance keeps its id across restarts, in TLS_DIR, so that a restart after a crash
// takes back at once what its previous run held (sessions, endpoints, claims in the database)
// instead of leaving it to the 60 s sweep of dead instances: until then the agents that reconnect
// could not bind their own names and ports again (334).
import { hostname } from 'node:os';
import { join } from 'node:path';
import { newId } from '../domain/ids.js';
import { TlsConfigError, describeFsError } from './tls/errors.js';
import { makeDirectories, PUBLIC_MODE, readIfExists, replaceAtomically } from './tls/files.js';

export const INSTANCE_FILE = 'instance.json';

export interface InstanceIdentity {
  readonly id: string;
  /** The id was a previous run's that ended without cleaning up: its rows are to be removed now. */
  readonly inherited: boolean;
  /** The record could not be written (TLS_DIR read-only, say): the next start will not know this id. */
  readonly unrecorded?: boolean;
}

interface Recorded {
  id: string;
  pid: number;
  host: string;
  /** When the process started (ms since the epoch): a container restarted as PID 1 again is another process. */
  started?: number;
}

/** This process's start, to the millisecond it can be known (stable across calls). */
const PROCESS_STARTED = Math.round(Date.now() - process.uptime() * 1000);

/**
 * The id this process runs under: the previous run's when that run was on this machine and its
 * process is gone, else a new one (a directory shared with a live process, or copied from
 * another machine, never makes two instances one). Records this process as the holder.
 */
export async function claimInstanceIdentity(tlsDir: string, isAlive: (pid: number) => boolean = processIsAlive): Promise<InstanceIdentity> {
  try {
    await makeDirectories(tlsDir, 0o700);
  } catch (error) {
    throw new TlsConfigError(`cannot create TLS_DIR ${tlsDir}: ${describeFsError(error)}`, { cause: error });
  }
  const path = join(tlsDir, INSTANCE_FILE);
  // The record is a convenience: one that cannot be read or written (a read-only TLS_DIR holding
  // an operator's CA) only means a crash's rows wait for the sweep, as without it.
  const previous = parse(await readIfExists(path).catch(() => undefined));
  const sameMachine = previous !== undefined && previous.host === hostname();
  const ours = sameMachine && previous.pid === process.pid && (previous.started === undefined || previous.started === PROCESS_STARTED);
  const heldByLive = sameMachine && (ours || (previous.pid !== process.pid && isAlive(previous.pid)));
  if (previous !== undefined && sameMachine && !heldByLive) return record(path, { id: previous.id, inherited: true });
  const fresh = { id: newId('inst').id, inherited: false };
  // A live holder keeps its file: this process runs under a new id without recording it.
  return heldByLive ? fresh : record(path, fresh);
}

async function record(path: string, identity: InstanceIdentity): Promise<InstanceIdentity> {
  const holder: Recorded = { id: identity.id, pid: process.pid, host: hostname(), started: PROCESS_STARTED };
  try {
    await replaceAtomically(path, `${JSON.stringify(holder)}\n`, PUBLIC_MODE);
    return identity;
  } catch {
    return { id: identity.id, inherited: identity.inherited, unrecorded: true };
  }
}

function parse(text: string | undefined): Recorded | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Recorded>;
    const wellFormed =
      typeof value.id === 'string' &&
      /^inst_[0-9A-Za-z]{27}$/.test(value.id) &&
      Number.isSafeInteger(value.pid) &&
      value.pid! > 0 &&
      typeof value.host === 'string' &&
      (value.started === undefined || Number.isSafeInteger(value.started));
    return wellFormed ? (value as Recorded) : undefined;
  } catch {
    return undefined;
  }
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
