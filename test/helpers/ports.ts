import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Ports for the servers the suites start on fixed ports (AGENT_PORT=0 turns the data plane off,
 * so those cannot be 0). Picked from 21000–30999, below the kernel's ephemeral range (32768+
 * here): a port picked by listening on 0 and closing could be handed again to the next listener
 * on port 0 (a server's PORT=0 API listener took an edge port that way once).
 *
 * A port found free is free only until someone binds it, and test files run concurrently: each
 * port handed out is also reserved, for the life of this process, by a file named after it in
 * RESERVATIONS (created exclusively, holding the pid), so no two test processes on this machine
 * ever hand out the same port; a reservation whose process has died is taken over.
 */
const PICK_FROM = 21_000;
const PICK_SPAN = 10_000;
const RESERVATIONS = join(tmpdir(), 'burrow-test-ports');

/** Ports this process reserved; their files are removed when it exits. */
const reserved = new Set<number>();

process.on('exit', () => {
  for (const port of reserved) rmSync(join(RESERVATIONS, String(port)), { force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reserves `port` for this process unless a live process holds it. */
function reserve(port: number): boolean {
  if (reserved.has(port)) return false;
  mkdirSync(RESERVATIONS, { recursive: true });
  const file = join(RESERVATIONS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      reserved.add(port);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let holder = Number.NaN;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        continue; // removed meanwhile: try again
      }
      // an empty file is one being written right now
      if (!Number.isInteger(holder) || holder <= 0 || alive(holder)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

function release(port: number): void {
  reserved.delete(port);
  rmSync(join(RESERVATIONS, String(port)), { force: true });
}

/** True when nothing listens on the port (on 127.0.0.1) right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Reserves `port` when it is also free right now. */
async function take(port: number): Promise<boolean> {
  if (!reserve(port)) return false;
  if (await isFree(port)) return true;
  release(port);
  return false;
}

/** `count` distinct free ports (not necessarily consecutive), reserved for this process. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let attempt = 0; ports.length < count; attempt++) {
    if (attempt >= 200 * count) throw new Error('no free port found');
    const port = PICK_FROM + Math.floor(Math.random() * PICK_SPAN);
    if (await take(port)) ports.push(port);
  }
  return ports;
}

/** A range of `size` consecutive free ports, reserved for this process. */
export async function freePortRange(size: number): Promise<{ first: number; last: number }> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const first = PICK_FROM + Math.floor(Math.random() * (PICK_SPAN - size));
    const taken: number[] = [];
    for (let port = first; port < first + size && (await take(port)); port++) taken.push(port);
    if (taken.length === size) return { first, last: first + size - 1 };
    for (const port of taken) release(port);
  }
  throw new Error('no free port range found');
}

/**
 * Runs `start` with ports from `pick`, again with fresh ones (up to three times in all) when it
 * failed on a port someone else bound meanwhile (EADDRINUSE): another program on this machine
 * may bind a port of ours between the check and the server's own bind.
 */
export async function withFreshPorts<P, T>(pick: () => Promise<P>, start: (ports: P) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports = await pick();
    try {
      return await start(ports);
    } catch (error) {
      if (attempt >= 3 || !/EADDRINUSE/.test(String((error as Error).message))) throw error;
    }
  }
}
