import net from 'node:net';
import tls from 'node:tls';
import { percentile } from '../stats.js';
import type { TcpJob, TcpResult, TcpTarget } from './tcp-load.js';
import { CHUNK, header } from './wire.js';

/**
 * The TCP load generator process (the counterpart of load-worker.ts for what autocannon cannot
 * do): new connections with a 1 KiB echo, bulk transfers, slow long-lived connections. One job at
 * a time over IPC; exits when the parent disconnects.
 */
process.on('message', (message: { id: number; job: TcpJob }) => {
  const progress = (p: string) => process.send!({ id: message.id, progress: p });
  runJob(message.job, progress).then(
    (result) => process.send!({ id: message.id, result }),
    (error: unknown) => process.send!({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));

const CONNECTION_TIMEOUT_MS = 10_000;

function runJob(job: TcpJob, progress: (p: string) => void): Promise<TcpResult> {
  if (job.kind === 'connections') return connections(job);
  if (job.kind === 'http-close') return httpClose(job);
  if (job.kind === 'bulk') return bulk(job);
  return slow(job, progress);
}

function connect(target: TcpTarget): net.Socket {
  const socket = target.tls
    ? tls.connect({ host: target.host, port: target.port, servername: target.tls.servername, rejectUnauthorized: false })
    : net.connect({ host: target.host, port: target.port });
  socket.setNoDelay(true);
  return socket;
}

function result(seconds: number, requests: number, latencies: number[], errors: number, timeouts: number, rate = requests / seconds): TcpResult {
  const sorted = Float64Array.from(latencies).sort();
  return {
    seconds,
    requests,
    reqPerSec: rate,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : NaN,
    non2xx: 0,
    errors,
    timeouts,
    statusCodes: {},
  };
}

/** One connection: connect, send the echo header and payload, read the payload back, end, wait for close. */
function echoOnce(target: TcpTarget, payload: Buffer): Promise<{ ok: true; ms: number } | { ok: false; timeout: boolean }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(target);
    let received = 0;
    let echoedAt = 0;
    const timer = setTimeout(() => finish({ ok: false, timeout: true }), CONNECTION_TIMEOUT_MS);
    let done = false;
    function finish(outcome: { ok: true; ms: number } | { ok: false; timeout: boolean }) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    }
    socket.write(Buffer.concat([Buffer.from(header({ kind: 'echo' })), payload]));
    socket.on('data', (data: Buffer) => {
      received += data.length;
      if (received >= payload.length && echoedAt === 0) {
        echoedAt = performance.now();
        socket.end();
      }
    });
    socket.on('error', () => finish({ ok: false, timeout: false }));
    socket.on('close', () => finish(echoedAt > 0 ? { ok: true, ms: echoedAt - started } : { ok: false, timeout: false }));
  });
}

async function connections(job: Extract<TcpJob, { kind: 'connections' }>): Promise<TcpResult> {
  const payload = Buffer.alloc(job.payloadBytes, 'e');
  const latencies: number[] = [];
  let errors = 0;
  let timeouts = 0;
  const started = performance.now();
  const deadline = started + job.seconds * 1000;
  await Promise.all(
    Array.from({ length: job.parallel }, async () => {
      while (performance.now() < deadline) {
        const outcome = await echoOnce(job.target, payload);
        if (outcome.ok) latencies.push(outcome.ms);
        else if (outcome.timeout) timeouts++;
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return result(seconds, latencies.length, latencies, errors, timeouts);
}

/**
 * New HTTP connections, written by hand: autocannon with Connection: close writes its next request
 * on the closing socket and times it from there, so its latencies (and counts) would be wrong.
 */
async function httpClose(job: Extract<TcpJob, { kind: 'http-close' }>): Promise<TcpResult> {
  const request = Buffer.from(`GET ${job.path} HTTP/1.1\r\nHost: ${job.hostHeader}\r\nConnection: close\r\n\r\n`);
  const latencies: number[] = [];
  let errors = 0;
  let timeouts = 0;
  let non2xx = 0;
  const once = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const socket = connect(job.target);
      const chunks: Buffer[] = [];
      let done = false;
      const timer = setTimeout(() => finish('timeout'), CONNECTION_TIMEOUT_MS);
      function finish(outcome: 'answer' | 'error' | 'timeout') {
        if (done) return;
        done = true;
        clearTimeout(timer);
        socket.destroy();
        if (outcome === 'timeout') timeouts++;
        else if (outcome === 'error') errors++;
        else if (Buffer.concat(chunks).subarray(0, 12).toString('latin1') !== 'HTTP/1.1 200') non2xx++;
        else latencies.push(performance.now() - started);
        resolve();
      }
      socket.write(request);
      socket.on('data', (data: Buffer) => chunks.push(data));
      socket.on('error', () => finish('error'));
      // The server closes after its answer (Connection: close): the end is the answer's end.
      socket.on('end', () => finish(chunks.length > 0 ? 'answer' : 'error'));
      socket.on('close', () => finish(chunks.length > 0 ? 'answer' : 'error'));
    });
  const started = performance.now();
  const deadline = started + job.seconds * 1000;
  await Promise.all(
    Array.from({ length: job.parallel }, async () => {
      while (performance.now() < deadline) await once();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { ...result(seconds, latencies.length + non2xx, latencies, errors, timeouts), non2xx };
}

function bulk(job: Extract<TcpJob, { kind: 'bulk' }>): Promise<TcpResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(job.target);
    let received = 0;
    let finished = false;
    const timer = setTimeout(() => finish(false, true), Math.max(60_000, job.bytes / 1e5));
    function finish(ok: boolean, timedOut = false) {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const seconds = (performance.now() - started) / 1000;
      resolve(result(seconds, ok ? 1 : 0, ok ? [seconds * 1000] : [], ok || timedOut ? 0 : 1, timedOut ? 1 : 0, ok ? job.bytes / 1e6 / seconds : 0));
    }
    socket.write(header({ kind: job.direction, bytes: job.bytes }));
    if (job.direction === 'down') {
      socket.on('data', (data: Buffer) => {
        received += data.length;
        if (received >= job.bytes) finish(true);
      });
    } else {
      let left = job.bytes;
      const write = () => {
        while (left > 0) {
          const chunk = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
          left -= chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', write);
        }
      };
      write();
      let answer = '';
      socket.on('data', (data: Buffer) => {
        answer += data.toString('latin1');
        if (answer.startsWith('ok\n')) finish(true);
      });
    }
    socket.on('error', () => finish(false));
    socket.on('close', () => finish(false));
  });
}

/**
 * `count` echo connections opened 50 at a time, then held for `seconds`; each sends 32 bytes every
 * `intervalMs` (jittered) and expects them back. A connection stalls when an echo is later than
 * `stallMs`, or it fails; each counts once.
 */
async function slow(job: Extract<TcpJob, { kind: 'slow' }>, progress: (p: string) => void): Promise<TcpResult> {
  const latencies: number[] = [];
  const stalled = new Set<number>();
  let errors = 0;
  let opened = 0;
  const sockets: net.Socket[] = [];
  const message = Buffer.alloc(32, 's');
  const open = (index: number) =>
    new Promise<void>((resolve) => {
      const socket = connect(job.target);
      socket.once(job.target.tls ? 'secureConnect' : 'connect', () => {
        opened++;
        resolve();
      });
      socket.on('error', () => {
        errors++;
        stalled.add(index);
        resolve();
      });
      socket.write(header({ kind: 'echo' }));
      sockets[index] = socket;
    });
  for (let i = 0; i < job.count; i += 50) await Promise.all(Array.from({ length: Math.min(50, job.count - i) }, (_, k) => open(i + k)));
  progress('open');

  const started = performance.now();
  const deadline = started + job.seconds * 1000;
  await Promise.all(
    sockets.map(
      (socket, index) =>
        new Promise<void>((resolve) => {
          let sentAt = 0;
          let received = 0;
          const send = () => {
            if (socket.destroyed || performance.now() >= deadline) return resolve();
            sentAt = performance.now();
            received = 0;
            socket.write(message);
            watchdog = setTimeout(() => stalled.add(index), job.stallMs);
          };
          let watchdog: NodeJS.Timeout | undefined;
          socket.on('data', (data: Buffer) => {
            received += data.length;
            if (received < message.length || sentAt === 0) return;
            clearTimeout(watchdog);
            latencies.push(performance.now() - sentAt);
            sentAt = 0;
            setTimeout(send, job.intervalMs * (0.5 + Math.random()));
          });
          socket.on('close', () => {
            clearTimeout(watchdog);
            if (performance.now() < deadline) stalled.add(index);
            resolve();
          });
          setTimeout(send, Math.random() * job.intervalMs);
          // An echo still missing at the end is a stall already counted by its watchdog.
          setTimeout(resolve, deadline - performance.now() + job.stallMs + 100);
        }),
    ),
  );
  for (const socket of sockets) socket.destroy();
  const seconds = (performance.now() - started) / 1000;
  return { ...result(seconds, latencies.length, latencies, errors, 0), opened, stalls: stalled.size };
}
