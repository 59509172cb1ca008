import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** What Linux's /proc says about a server process: its listening ports, CPU time and memory. */

/** TCP ports the process listens on, from its socket inodes and /proc/<pid>/net/tcp{,6}. */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (match) inodes.add(match[1]!);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return [];
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT, st 0A is LISTEN, inode is the 10th field.
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9]!)) continue;
      ports.push(Number.parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** Resident memory of a process from /proc/<pid>/status: current (VmRSS) and peak (VmHWM), in MB. */
export function memoryOf(pid: number): { rssMb: number; hwmMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/**
 * Samples a process's RSS every `intervalMs` while it runs. `peakMb` is the larger of the
 * highest sample and the kernel's high-water mark (VmHWM), so a spike between samples counts.
 */
export class RssSampler {
  private timer: NodeJS.Timeout;
  private maxSampleMb = 0;
  private hwmMb = 0;
  private lastMb = 0;

  constructor(
    private readonly pid: number,
    intervalMs = 100,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  private sample(): void {
    const memory = memoryOf(this.pid);
    if (!memory) return;
    this.lastMb = memory.rssMb;
    this.maxSampleMb = Math.max(this.maxSampleMb, memory.rssMb);
    this.hwmMb = Math.max(this.hwmMb, memory.hwmMb);
  }

  /** Peak so far (MB); also takes a fresh sample. */
  peakMb(): number {
    this.sample();
    return Math.max(this.maxSampleMb, this.hwmMb);
  }

  currentMb(): number {
    this.sample();
    return this.lastMb;
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }
}
