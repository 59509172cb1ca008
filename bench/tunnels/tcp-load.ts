import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadResult } from '../load.js';
import { forkLoadWorker, stopChild } from '../processes.js';

/** Where a TCP load goes; with `tls`, the client speaks TLS (SNI `servername`) to the local TLS server. */
export interface TcpTarget {
  host: string;
  port: number;
  tls?: { servername: string };
}

export type TcpJob =
  /** `parallel` loops of: connect, `echo` + payload, read it back, close; for `seconds`. */
  | { kind: 'connections'; target: TcpTarget; parallel: number; seconds: number; payloadBytes: number }
  /** `parallel` loops of: connect, GET `path` with Connection: close, read the answer to the server's close; for `seconds`. */
  | { kind: 'http-close'; target: TcpTarget; parallel: number; seconds: number; path: string; hostHeader: string }
  /** One connection moving `bytes` down (server → client) or up. */
  | { kind: 'bulk'; target: TcpTarget; direction: 'down' | 'up'; bytes: number }
  /** `count` echo connections held open, each sending a little every `intervalMs`, for `seconds`. */
  | { kind: 'slow'; target: TcpTarget; count: number; seconds: number; intervalMs: number; stallMs: number };

/**
 * What a TCP job measured, shaped as autocannon's figures so rounds.ts takes both: `requests`
 * counts connections (bulk: transfers), `reqPerSec` is connections/s (bulk: MB/s), latencies in ms
 * (connections: connect to echo; http-close: connect to the whole answer; bulk: the transfer;
 * slow: each echo); `non2xx` counts HTTP answers that were not 200.
 */
export interface TcpResult extends LoadResult {
  /** slow: connections that were open at once, and those whose echo was late by more than stallMs or that failed. */
  opened?: number;
  stalls?: number;
}

type WorkerMessage = { id: number; result: TcpResult } | { id: number; error: string } | { id: number; progress: string };

/** IPC sends JSON: a NaN (no latency measured) arrives as null. */
function revive(result: TcpResult): TcpResult {
  for (const key of ['p50', 'p90', 'p99', 'max', 'reqPerSec'] as const) if (result[key] === null) result[key] = NaN;
  return result;
}

/** The parent side of bench/tunnels/tcp-load-worker.ts: a process of its own (pinned with the load generator under --pin). */
export class TcpLoadGenerator {
  private readonly worker: ChildProcess = forkLoadWorker(fileURLToPath(new URL('./tcp-load-worker.ts', import.meta.url)));
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: TcpResult) => void; reject: (e: Error) => void; progress?: (p: string) => void }>();

  constructor() {
    this.worker.on('message', (message: WorkerMessage) => {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      if ('progress' in message) return waiter.progress?.(message.progress);
      this.pending.delete(message.id);
      if ('error' in message) waiter.reject(new Error(`TCP load worker: ${message.error}`));
      else waiter.resolve(revive(message.result));
    });
    this.worker.once('exit', (code, signal) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`TCP load worker exited (code ${code}, signal ${signal})`));
      this.pending.clear();
    });
  }

  /** `progress('open')` is called for a slow job once every connection is open. */
  run(job: TcpJob, progress?: (p: string) => void): Promise<TcpResult> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, ...(progress ? { progress } : {}) });
      this.worker.send({ id, job });
    });
  }

  async close(): Promise<void> {
    this.worker.disconnect();
    await stopChild(this.worker, 2000);
  }
}
