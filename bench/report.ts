import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';

export interface MachineInfo {
  date: string;
  cpuModel: string;
  cores: number;
  node: string;
  platform: string;
  kernel: string;
  totalMemoryMb: number;
  loadAverageAtStart: number[];
}

export function machineInfo(): MachineInfo {
  const cpu = cpus();
  return {
    date: new Date().toISOString(),
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    kernel: release(),
    totalMemoryMb: Math.round(totalmem() / 2 ** 20),
    loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** The commit under test and the files of src/ that differ from it (others may be editing). */
export function revision(cwd: string): { commit: string; uncommittedSrc: string[] } {
  const git = (...args: string[]) => spawnSync('git', args, { cwd, encoding: 'utf8' }).stdout ?? '';
  const commit = git('log', '-1', '--format=%h %s').trim() || 'unknown';
  // Porcelain lines are "XY path": two status letters and a space, then the path.
  const uncommittedSrc = git('status', '--porcelain', '--', 'src').split('\n').filter(Boolean).map((l) => l.slice(3));
  return { commit, uncommittedSrc };
}

export function describeMachine(m: MachineInfo): string {
  return `${m.cpuModel}, ${m.cores} cores, ${m.totalMemoryMb} MB, node ${m.node} (${m.platform}), load average ${m.loadAverageAtStart.join(' ')} at start`;
}

/** A plain text table: first row is the header; numbers are right-aligned. */
export function table(rows: (string | number)[][]): string {
  const text = rows.map((row) => row.map((cell) => String(cell)));
  const widths = text[0]!.map((_, column) => Math.max(...text.map((row) => row[column]?.length ?? 0)));
  const line = (row: string[], index: number) =>
    row
      .map((cell, column) => {
        const numeric = index > 0 && /^[-+]?[\d,.]+(\s?[×%]|x)?$|^—$/.test(cell);
        return numeric ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!);
      })
      .join('  ')
      .trimEnd();
  const [header, ...body] = text;
  return [line(header!, 0), widths.map((w) => '─'.repeat(w)).join('  '), ...body.map((row) => line(row, 1))].join('\n');
}

export const fmt = {
  rate: (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—'),
  ms: (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '—'),
  ratio: (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '—'),
  /** Three digits, so that a ratio just under a goal never prints as the goal itself. */
  preciseRatio: (n: number) => (Number.isFinite(n) ? `${n.toFixed(3)}×` : '—'),
  pct: (n: number) => (Number.isFinite(n) ? `±${(n * 100).toFixed(0)}%` : '—'),
  mb: (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—'),
};

export interface Target {
  name: string;
  goal: string;
  measured: string;
  met: boolean;
  /** The tunnel bench's targets whose miss fails the run; its other checks are reported only. */
  judged?: boolean;
}

export function targetsTable(targets: Target[]): string {
  return table([['target', 'goal', 'measured', 'result'], ...targets.map((t) => [t.name, t.goal, t.measured, t.met ? 'PASS' : 'MISS'])]);
}

export function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

export function heading(text: string): string {
  return `\n${text}\n${'═'.repeat(text.length)}`;
}
