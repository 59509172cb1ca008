import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { LoadGenerator } from '../load.js';
import { pinCpus, startScriptServer } from '../processes.js';
import { fmt, table } from '../report.js';
import { alternate } from '../rounds.js';
import type { Scenario } from '../scenarios.js';

/**
 * What burrow's Fastify plumbing costs over HTTP: four servers (bench/experiments/
 * fastify-variant-server.ts, variants A–D, see there), the same GET with the same 8-field
 * response, driven A B C D in turn by autocannon from its own process, pinned like the bench.
 *
 *   node --import tsx bench/experiments/fastify-overhead.ts [seconds] [rounds]
 */
const seconds = Number(process.argv[2] ?? 4);
const rounds = Number(process.argv[3] ?? 3);
if (cpus().length >= 2) pinCpus('0', cpus().length === 2 ? '1' : `1-${cpus().length - 1}`);
const script = fileURLToPath(new URL('./fastify-variant-server.ts', import.meta.url));
const variants = ['A', 'B', 'C', 'D'];
const servers = await Promise.all(variants.map((v) => startScriptServer(v, script, { VARIANT: v })));
const scenario: Scenario = {
  name: 'get',
  describe: 'GET /credentials/cr_1',
  spec: () => ({ method: 'GET', path: '/credentials/cr_1', headers: { authorization: 'Bearer x', 'service-version': '2' } }),
};
const load = new LoadGenerator();
try {
  const figures = await alternate(
    load,
    scenario,
    servers.map((s) => ({ name: s.name, baseUrl: s.baseUrl, seeded: { apiKey: '', credentialIds: [] }, pid: s.pid })),
    { seconds, rounds, warmupSeconds: 2, connections: 32 },
    (line) => process.stderr.write(`· ${line}\n`),
  );
  const labels: Record<string, string> = {
    A: 'A. pino at warn, child per request, 6 async hooks (burrow)',
    B: 'B. A with a lazy child logger (the proposal)',
    C: 'C. A without any logger (the most B can save)',
    D: 'D. no hooks, no logger (Fastify alone)',
  };
  const a = figures.A!.reqPerSec;
  process.stdout.write(
    `\n${table([
      ['variant', 'req/s', 'req/s vs A', 'CPU µs/request', 'CPU vs A'],
      ...variants.map((v) => [
        labels[v]!,
        fmt.rate(figures[v]!.reqPerSec),
        fmt.ratio(figures[v]!.reqPerSec / a),
        figures[v]!.cpuUsPerRequest.toFixed(1),
        fmt.ratio(figures[v]!.cpuUsPerRequest / figures.A!.cpuUsPerRequest),
      ]),
    ])}\nCPU µs/request: the server process's CPU time (all threads) per answer, median over rounds (the steadier figure here).\n`,
  );
} finally {
  await load.close();
  await Promise.all(servers.map((s) => s.stop()));
}
