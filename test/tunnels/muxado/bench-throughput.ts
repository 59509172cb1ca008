/**
 * Bulk throughput of one muxado stream over loopback TCP (not a test; run by hand):
 *   node --import tsx test/tunnels/muxado/bench-throughput.ts [MB] [streams]
 */
import net from 'node:net';
import { sessionPair, tcpPair } from './helpers.js';

const mb = Number(process.argv[2] ?? 256);
const streams = Number(process.argv[3] ?? 1);
const chunk = Buffer.alloc(64 * 1024, 0x61);

async function rawTcp(): Promise<number> {
  const [a, b] = await tcpPair();
  const total = mb * 1024 * 1024;
  const t0 = performance.now();
  const done = new Promise<void>((resolve) => {
    let got = 0;
    b.on('data', (d: Buffer) => {
      got += d.length;
      if (got >= total) resolve();
    });
  });
  let sent = 0;
  while (sent < total) {
    sent += chunk.length;
    if (!a.write(chunk)) await new Promise((r) => a.once('drain', r));
  }
  await done;
  a.destroy();
  b.destroy();
  return performance.now() - t0;
}

async function muxado(): Promise<number> {
  const pair = sessionPair(process.env.FRAME ? { maxSendFrameSize: Number(process.env.FRAME) } : {}, (await tcpPair()) as [net.Socket, net.Socket]);
  const per = Math.floor((mb * 1024 * 1024) / streams);
  const t0 = performance.now();
  const received: Promise<void>[] = [];
  pair.server.on('stream', (s) => {
    s.end();
    received.push(
      new Promise<void>((resolve, reject) => {
        let got = 0;
        s.on('data', (d: Buffer) => (got += d.length));
        s.on('end', () => (got === per ? resolve() : reject(new Error(`got ${got}`))));
        s.on('error', reject);
      }),
    );
  });
  await Promise.all(
    Array.from({ length: streams }, async () => {
      const s = pair.client.open();
      s.on('error', () => undefined);
      s.resume();
      let sent = 0;
      while (sent < per) {
        const n = Math.min(chunk.length, per - sent);
        sent += n;
        if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) await new Promise((r) => s.once('drain', r));
      }
      s.end();
    }),
  );
  while (received.length < streams) await new Promise((r) => setImmediate(r));
  await Promise.all(received);
  const ms = performance.now() - t0;
  pair.client.close();
  pair.server.close();
  return ms;
}

const raw = await rawTcp();
const mux = await muxado();
const rate = (ms: number) => ((mb / ms) * 1000).toFixed(0);
console.log(`${mb} MB, ${streams} stream(s): raw TCP ${raw.toFixed(0)} ms (${rate(raw)} MB/s), muxado ${mux.toFixed(0)} ms (${rate(mux)} MB/s), ratio ${(mux / raw).toFixed(2)}`);
