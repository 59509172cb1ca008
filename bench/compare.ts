import { join } from 'node:path';
import { api, generateApiKey } from '../test/helpers/server-process.js';
import { describePlacement, roundSettings, shuffled, type ModeResult, type RunContext } from './context.js';
import { LoadGenerator } from './load.js';
import { BURROW_LOG_LEVEL, startBaseline, startBurrow } from './processes.js';
import { RssSampler } from './procfs.js';
import { fmt, heading, table, targetsTable, type Target } from './report.js';
import { alternate, failures, pairedRatio, type Contestant, type Figures } from './rounds.js';
import { SCENARIOS, type Seeded } from './scenarios.js';
import { seedCredentialsOverHttp, seedEdgeWithPolicy } from './seed.js';

/** Minimum burrow/baseline req/s ratio per scenario (report only). */
const RATIO_TARGETS: Record<string, number> = { get: 0.5, create: 0.3, update: 0.3 };
const SEEDED_CREDENTIALS = 1000;
const POLICY_RULES = 10;

/** Default mode: burrow against the bare node:http baseline, scenario by scenario, A B A B. */
export async function runCompare(ctx: RunContext): Promise<ModeResult> {
  const { options, log, out } = ctx;
  const settings = roundSettings(options);
  const apiKey = generateApiKey();
  const databaseUrl = `sqlite:${join(ctx.dir, 'compare.db')}`;

  log(`starting burrow (${ctx.command.describe}, SQLite file ${databaseUrl.slice(7)}, LOG_LEVEL=${BURROW_LOG_LEVEL})`);
  const burrow = await startBurrow({ name: 'burrow', command: ctx.command, databaseUrl, apiKey });
  const rss = new RssSampler(burrow.pid);
  const target = { baseUrl: burrow.baseUrl, apiKey };

  log(`seeding ${SEEDED_CREDENTIALS} credentials over HTTP …`);
  const seedStart = performance.now();
  const credentialIds = shuffled(await seedCredentialsOverHttp(target, SEEDED_CREDENTIALS));
  const edgeId = options.scenarios.includes('policy') ? await seedEdgeWithPolicy(target, POLICY_RULES) : undefined;
  log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
  const seeded: Seeded = { apiKey, credentialIds, ...(edgeId ? { edgeId } : {}) };

  // The baseline answers with the bytes of a real credential answer.
  const sample = await api(target, 'GET', `/credentials/${credentialIds[0]}`);
  const baseline = await startBaseline(sample.text);
  log(`baseline: bare node:http at ${baseline.baseUrl}, answering every request with ${Buffer.byteLength(sample.text)} bytes of JSON`);

  const load = new LoadGenerator();
  const contestants: Contestant[] = [
    { name: 'burrow', baseUrl: burrow.baseUrl, seeded, pid: burrow.pid },
    { name: 'baseline', baseUrl: baseline.baseUrl, seeded, pid: baseline.pid },
  ];
  const results: Record<string, Record<string, Figures>> = {};
  try {
    for (const name of options.scenarios) {
      results[name] = await alternate(load, SCENARIOS[name]!, contestants, settings, log);
    }
  } finally {
    await load.close();
    rss.stop();
  }
  const peakRssMb = rss.peakMb();
  await Promise.all([burrow.stop(), baseline.stop()]);

  // The table.
  const rows: (string | number)[][] = [
    ['scenario', 'server', 'req/s', 'spread', 'p50 ms', 'p99 ms', 'CPU µs/req', 'non-2xx', 'req/s ratio', 'CPU ratio'],
  ];
  const ratios: Record<string, number> = {};
  const cpuRatios: Record<string, number> = {};
  let failed = 0;
  for (const name of options.scenarios) {
    const b = results[name]!.burrow!;
    const base = results[name]!.baseline!;
    ratios[name] = pairedRatio(b, base, (r) => r.reqPerSec);
    cpuRatios[name] = pairedRatio(base, b, (r) => r.cpuUsPerRequest);
    failed += failures(b) + failures(base);
    rows.push([
      name, 'burrow', fmt.rate(b.reqPerSec), fmt.pct(b.reqPerSecSpread), fmt.ms(b.p50), fmt.ms(b.p99),
      b.cpuUsPerRequest.toFixed(0), failures(b), fmt.ratio(ratios[name]), fmt.ratio(cpuRatios[name]),
    ]);
    rows.push([
      '', 'baseline', fmt.rate(base.reqPerSec), fmt.pct(base.reqPerSecSpread), fmt.ms(base.p50), fmt.ms(base.p99),
      base.cpuUsPerRequest.toFixed(0), failures(base), '', '',
    ]);
  }

  const targets: Target[] = [];
  for (const [name, minimum] of Object.entries(RATIO_TARGETS)) {
    if (ratios[name] === undefined) continue;
    targets.push({
      name: `${name} req/s vs baseline`,
      goal: `≥ ${minimum}×`,
      measured: `${fmt.preciseRatio(ratios[name])} (CPU ratio ${fmt.preciseRatio(cpuRatios[name]!)})`,
      met: ratios[name] >= minimum,
    });
  }
  targets.push({ name: 'non-2xx answers', goal: '0', measured: String(failed), met: failed === 0 });

  out(heading('burrow vs bare node:http baseline'));
  out(
    `${options.rounds} rounds × ${options.duration} s per server and scenario, A B A B after ${options.warmup} s warm-up each; ` +
      `${options.connections} connections; autocannon in its own process; ${describePlacement(options)}.\n` +
      `burrow: ${ctx.command.describe}, SQLite file (WAL, fdatasync per write), LOG_LEVEL=${BURROW_LOG_LEVEL}, RATE_LIMIT_PER_MINUTE=0, ` +
      `${SEEDED_CREDENTIALS} credentials seeded over HTTP.\n` +
      `req/s, p50 and p99 are medians over rounds; spread is ±half the range of req/s over rounds; burrow/baseline is the median of\n` +
      `the per-round ratios (round i of burrow ran right before round i of the baseline); non-2xx includes errors and timeouts.\n` +
      `CPU µs/req is the server process's CPU time (all threads) per answer, from /proc; CPU ratio = baseline's ÷ burrow's, the\n` +
      `req/s ratio the two would show if each had its core to itself: a cross-check far less moved by other load on the machine.\n` +
      `The baseline body is one credential (${Buffer.byteLength(sample.text)} B), also for list (burrow sends 100) and policy.\n`,
  );
  out(table(rows));
  out(`\nburrow peak RSS during the run: ${fmt.mb(peakRssMb)} MB`);
  out(`\n${targetsTable(targets)}`);
  if (failed > 0) reportFailures(results, out);

  return {
    ok: failed === 0,
    json: {
      settings: { ...settings, seededCredentials: SEEDED_CREDENTIALS, policyRules: POLICY_RULES, logLevel: BURROW_LOG_LEVEL, server: ctx.command.describe },
      baselineBodyBytes: Buffer.byteLength(sample.text),
      scenarios: Object.fromEntries(
        options.scenarios.map((name) => [
          name,
          { describe: SCENARIOS[name]!.describe, ratio: ratios[name], cpuRatio: cpuRatios[name], ...results[name] },
        ]),
      ),
      burrowPeakRssMb: peakRssMb,
      targets,
      nonSuccess: failed,
    },
  };
}

export function reportFailures(results: Record<string, Record<string, Figures>>, out: (text: string) => void): void {
  out('\n!!! FAILED: some answers were not 2xx (or connections failed). The figures above are not valid.');
  for (const [scenario, byServer] of Object.entries(results)) {
    for (const [server, f] of Object.entries(byServer)) {
      if (failures(f) === 0) continue;
      out(`!!! ${scenario}/${server}: ${f.non2xx} non-2xx, ${f.errors} errors, ${f.timeouts} timeouts`);
      if (f.firstFailure) out(`!!!   first: ${f.firstFailure.status} ${f.firstFailure.body}`);
    }
  }
}
