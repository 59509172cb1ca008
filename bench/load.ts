import type { ChildProcess } from 'node:child_process';
import { forkLoadWorker, stopChild } from './processes.js';

/**
 * One kind of request, as plain data so it can cross to the load process. With `ids`, it
 * becomes one request per id (`{id}` in the path is the id, `{n}` in the body its index) that
 * every connection cycles through; without, one fixed request.
 */
export interface LoadSpec {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  path: string;
  ids?: string[];
  body?: string;
  headers: Record<string, string>;
}

export interface LoadJob {
  url: string;
  connections: number;
  seconds: number;
  spec: LoadSpec;
}

/** What one autocannon run measured. Latencies are exact percentiles of every 2xx answer, in ms. */
export interface LoadResult {
  seconds: number;
  /** Every answer, whatever its status. */
  requests: number;
  reqPerSec: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** The first answer that was not 2xx, to say why a run failed. */
  firstFailure?: { status: number; body: string };
}

type WorkerMessage = { id: number; result: LoadResult } | { id: number; error: string };

/** The parent side: sends jobs to bench/load-worker.ts, one at a time. */
export class LoadGenerator {
  private readonly worker: ChildProcess = forkLoadWorker();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: LoadResult) => void; reject: (e: Error) => void }>();

  constructor() {
    this.worker.on('message', (message: WorkerMessage) => {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if ('error' in message) waiter.reject(new Error(`load worker: ${message.error}`));
      else waiter.resolve(message.result);
    });
    this.worker.once('exit', (code, signal) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`load worker exited (code ${code}, signal ${signal})`));
      this.pending.clear();
    });
  }

  run(job: LoadJob): Promise<LoadResult> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.send({ id, job });
    });
  }

  async close(): Promise<void> {
    this.worker.disconnect();
    await stopChild(this.worker, 2000);
  }
}
