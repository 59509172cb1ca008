import autocannon from 'autocannon';
import type { LoadJob, LoadResult } from './load.js';
import { percentile } from './stats.js';

/**
 * The load generator process: receives one job at a time over IPC, runs autocannon against the
 * job's URL in this process (so its CPU is not the server's), and answers with the figures.
 * Latencies are taken from every 2xx response (autocannon's own histogram rounds to whole ms).
 * Exits when the parent disconnects.
 */
process.on('message', (message: { id: number; job: LoadJob }) => {
  runJob(message.job).then(
    (result) => process.send!({ id: message.id, result }),
    (error: unknown) => process.send!({ id: message.id, error: error instanceof Error ? error.stack ?? error.message : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));

async function runJob(job: LoadJob): Promise<LoadResult> {
  const { spec } = job;
  // One prebuilt request per id, cycled through by every connection: autocannon builds each
  // request buffer once, so rotating ids costs the client nothing (a setupRequest function
  // would rebuild the request every time, and that would cap the baseline, not the server).
  const ids = spec.ids ?? [];
  if (spec.path.includes('{id}') && ids.length === 0) throw new Error(`${spec.path} needs ids`);
  const count = Math.max(1, ids.length);
  const requests: autocannon.RequestSpec[] = [];
  for (let i = 0; i < count; i++) {
    requests.push({
      method: spec.method,
      path: spec.path.replace('{id}', ids[i] ?? ''),
      headers: spec.headers,
      ...(spec.body === undefined ? {} : { body: spec.body.replace('{n}', String(i)) }),
    });
  }

  const latencies: number[] = [];
  const instance = autocannon({
    url: job.url,
    connections: job.connections,
    duration: job.seconds,
    timeout: 10,
    requests,
  });
  instance.on('response', (_client: unknown, status: number, _bytes: number, responseTimeMs: number) => {
    if (status >= 200 && status <= 299) latencies.push(responseTimeMs);
  });
  const result = await instance;

  // No per-response body hook (it costs the client); when something failed, ask again to show why.
  const firstFailure = result.non2xx > 0 ? await probeFailure(job.url, requests.slice(0, 20)) : undefined;
  const sorted = Float64Array.from(latencies).sort();
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  return {
    seconds: result.duration,
    requests: result.requests.total,
    reqPerSec: result.requests.total / result.duration,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : NaN,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    ...(firstFailure ? { firstFailure } : {}),
  };
}

/** Replays a few of the requests one by one and returns the first answer that is not 2xx. */
async function probeFailure(url: string, requests: autocannon.RequestSpec[]): Promise<LoadResult['firstFailure']> {
  for (const request of requests) {
    try {
      const response = await fetch(new URL(request.path ?? '/', url), {
        method: request.method ?? 'GET',
        headers: request.headers ?? {},
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: AbortSignal.timeout(5000),
      });
      const body = await response.text();
      if (response.status < 200 || response.status > 299) return { status: response.status, body: body.slice(0, 500) };
    } catch (error) {
      return { status: 0, body: String(error) };
    }
  }
  return { status: 0, body: '(replaying the first requests one by one answered 2xx: not reproduced)' };
}
