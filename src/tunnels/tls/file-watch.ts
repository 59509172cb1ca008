// Noticing that certificate files changed: fs.watch on the directories that hold them (a
// renewal tool usually writes a new file and renames it over the old one, which a watch on the
// file itself would miss), debounced, and a slow stat poll for file systems where fs.watch says
// nothing (NFS, some container mounts).
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

export const WATCH_DEBOUNCE_MS = 250;
export const STAT_POLL_MS = 30_000;

export interface FileWatchOptions {
  /** Files to watch (their directories are watched), and directories whose every entry counts. */
  readonly files: readonly string[];
  readonly directories: readonly string[];
  readonly debounceMs?: number;
  readonly pollMs?: number;
  /** false: the stat poll alone (what a file system without watch events gets). */
  readonly fsWatch?: boolean;
}

export class CertificateFileWatch {
  private watchers: FSWatcher[] = [];
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private signature: string | undefined;
  private readonly files: string[];
  private readonly directories: string[];
  private readonly debounceMs: number;
  private readonly pollMs: number;
  private readonly fsWatch: boolean;

  constructor(
    options: FileWatchOptions,
    private readonly onChange: () => void,
  ) {
    this.files = options.files.map((file) => resolve(file));
    this.directories = options.directories.map((directory) => resolve(directory));
    this.debounceMs = options.debounceMs ?? WATCH_DEBOUNCE_MS;
    this.pollMs = options.pollMs ?? STAT_POLL_MS;
    this.fsWatch = options.fsWatch ?? true;
  }

  get watching(): boolean {
    return this.files.length > 0 || this.directories.length > 0;
  }

  start(): void {
    if (!this.watching || this.poll) return;
    const watched = this.fsWatch ? new Set([...this.files.map((file) => dirname(file)), ...this.directories]) : new Set<string>();
    for (const directory of watched) {
      try {
        const watcher = watch(directory, { persistent: false }, () => this.changed());
        watcher.on('error', () => watcher.close()); // the poll still sees changes
        this.watchers.push(watcher);
      } catch {
        // a directory fs.watch cannot watch: the poll covers it
      }
    }
    void this.stats().then((signature) => (this.signature ??= signature));
    this.poll = setInterval(() => void this.pollOnce(), this.pollMs).unref();
  }

  stop(): void {
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    clearInterval(this.poll);
    clearTimeout(this.debounce);
    this.poll = undefined;
  }

  private changed(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      // the poll then compares with what this reload read, not with an older state
      void this.stats().then((signature) => (this.signature = signature));
      this.onChange();
    }, this.debounceMs).unref();
  }

  private async pollOnce(): Promise<void> {
    const signature = await this.stats();
    if (this.signature !== undefined && signature !== this.signature) this.changed();
    this.signature = signature;
  }

  /** Size, mtime and inode of every file watched: what changes when one is rewritten or replaced. */
  private async stats(): Promise<string> {
    const paths = [...this.files];
    for (const directory of this.directories) {
      const names = await readdir(directory).catch(() => [] as string[]);
      paths.push(...names.sort().map((name) => join(directory, name)));
    }
    const parts = await Promise.all(
      paths.map((path) => stat(path).then((s) => `${path}:${s.size}:${s.mtimeMs}:${s.ino}`, () => `${path}:-`)),
    );
    return parts.join('|');
  }
}
