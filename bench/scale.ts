import { statSync } from 'node:fs';
import { join } from 'node:path';
import { generateApiKey } from '../test/helpers/server-process.js';
import { reportFailures } from './compare.js';
import { describePlacement, roundSettings, shuffled, type ModeResult, type RunContext } from './context.js';
import { LoadGenerator } from './load.js';
import { BURROW_LOG_LEVEL, startBurrow, type ServerChild } from './processes.js';
import { RssSampler } from './procfs.js';
import { fmt, heading, table, targetsTable, type Target } from './report.js';
import { alternate, failures, pairedRatio, type Contestant, type Figures } from './rounds.js';
import { SCENARIOS } from './scenarios.js';
import { bulkSeedCredentials, seedCredentialsOverHttp } from './seed.js';

const SMALL = 1000;
const LATENCY_LIMIT = 1.5;
const RSS_LIMIT_MB = 200;

function rowsLabel(rows: number): string {
  if (rows >= 1e6 && rows % 1e5 === 0) return `${rows / 1e6}M`;
  if (rows >= 1e3 && rows % 100 === 0) return `${rows / 1e3}k`;
  return String(rows);
}

/**
 * --scale: the same server at 1,000 credentials (seeded over HTTP) and at --rows credentials
 * (seeded in bulk through the storage layer), both running, measured A B A B on get and list;
 * peak RSS of each from /proc.
 */
export async function runScale(ctx: RunContext): Promise<ModeResult> {
  const { options, log, out } = ctx;
  const settings = roundSettings(options);
  const small = rowsLabel(SMALL);
  const large = rowsLabel(options.scaleRows);

  // Seed the large store first, while nothing else of ours is running.
  const largeKey = generateApiKey();
  const largeUrl = `sqlite:${join(ctx.dir, `scale-${large}.db`)}`;
  log(`seeding ${options.scaleRows.toLocaleString('en-US')} credentials through the storage layer into ${largeUrl.slice(7)} …`);
  let lastShown = 0;
  const bulk = await bulkSeedCredentials(largeUrl, largeKey, options.scaleRows, SMALL, (done) => {
    if (done - lastShown >= 200_000 || done === options.scaleRows) {
      lastShown = done;
      log(`  ${done.toLocaleString('en-US')} rows`);
    }
  });
  const fileMb = statSync(largeUrl.slice(7)).size / 2 ** 20;
  log(`seeded in ${bulk.seconds.toFixed(1)} s (${Math.round(options.scaleRows / bulk.seconds).toLocaleString('en-US')} rows/s), database ${fileMb.toFixed(0)} MB`);

  const smallKey = generateApiKey();
  const servers: ServerChild[] = [];
  const samplers = new Map<string, RssSampler>();
  const load = new LoadGenerator();
  const results: Record<string, Record<string, Figures>> = {};
  try {
    log(`starting two burrow servers (${ctx.command.describe}, LOG_LEVEL=${BURROW_LOG_LEVEL}): ${small} and ${large} credentials`);
    const smallServer = await startBurrow({
      name: `burrow-${small}`,
      command: ctx.command,
      databaseUrl: `sqlite:${join(ctx.dir, `scale-${small}.db`)}`,
      apiKey: smallKey,
    });
    servers.push(smallServer);
    samplers.set(small, new RssSampler(smallServer.pid));
    const largeServer = await startBurrow({ name: `burrow-${large}`, command: ctx.command, databaseUrl: largeUrl, apiKey: largeKey });
    servers.push(largeServer);
    samplers.set(large, new RssSampler(largeServer.pid));

    log(`seeding ${SMALL} credentials over HTTP into the ${small} server …`);
    const smallIds = shuffled(await seedCredentialsOverHttp({ baseUrl: smallServer.baseUrl, apiKey: smallKey }, SMALL));
    const contestants: Contestant[] = [
      { name: small, baseUrl: smallServer.baseUrl, seeded: { apiKey: smallKey, credentialIds: smallIds }, pid: smallServer.pid },
      { name: large, baseUrl: largeServer.baseUrl, seeded: { apiKey: largeKey, credentialIds: bulk.sampleIds }, pid: largeServer.pid },
    ];
    for (const name of options.scenarios) {
      results[name] = await alternate(load, SCENARIOS[name]!, contestants, settings, log);
    }
  } finally {
    await load.close();
    for (const sampler of samplers.values()) sampler.stop();
  }
  const peak = Object.fromEntries([...samplers].map(([name, sampler]) => [name, sampler.peakMb()]));
  await Promise.all(servers.map((s) => s.stop()));

  const rows: (string | number)[][] = [
    ['scenario', 'credentials', 'req/s', 'spread', 'p50 ms', 'p99 ms', 'CPU µs/req', 'non-2xx', `p50 ${large}/${small}`, `p99 ${large}/${small}`],
  ];
  const targets: Target[] = [];
  const ratios: Record<string, { p50: number; p99: number; reqPerSec: number }> = {};
  let failed = 0;
  for (const name of options.scenarios) {
    const a = results[name]![small]!;
    const b = results[name]![large]!;
    failed += failures(a) + failures(b);
    ratios[name] = { p50: pairedRatio(b, a, (r) => r.p50), p99: pairedRatio(b, a, (r) => r.p99), reqPerSec: pairedRatio(b, a, (r) => r.reqPerSec) };
    rows.push([name, small, fmt.rate(a.reqPerSec), fmt.pct(a.reqPerSecSpread), fmt.ms(a.p50), fmt.ms(a.p99), a.cpuUsPerRequest.toFixed(0), failures(a), '', '']);
    rows.push([
      '', large, fmt.rate(b.reqPerSec), fmt.pct(b.reqPerSecSpread), fmt.ms(b.p50), fmt.ms(b.p99), b.cpuUsPerRequest.toFixed(0),
      failures(b), fmt.ratio(ratios[name].p50), fmt.ratio(ratios[name].p99),
    ]);
    if (name === 'get' || name === 'list') {
      for (const p of ['p50', 'p99'] as const) {
        const ratio = ratios[name][p];
        targets.push({ name: `${name} ${p} at ${large} vs ${small}`, goal: `≤ ${LATENCY_LIMIT}×`, measured: fmt.ratio(ratio), met: ratio <= LATENCY_LIMIT });
      }
    }
  }
  targets.push({ name: `peak RSS at ${large}`, goal: `≤ ${RSS_LIMIT_MB} MB`, measured: `${fmt.mb(peak[large]!)} MB`, met: peak[large]! <= RSS_LIMIT_MB });
  targets.push({ name: 'non-2xx answers', goal: '0', measured: String(failed), met: failed === 0 });

  out(heading(`burrow at ${small} vs ${large} credentials`));
  out(
    `${options.rounds} rounds × ${options.duration} s per server and scenario, A B A B after ${options.warmup} s warm-up each; ` +
      `${options.connections} connections; ${describePlacement(options)}; both servers run side by side (${ctx.command.describe}, LOG_LEVEL=${BURROW_LOG_LEVEL}).\n` +
      `${large}: ${options.scaleRows.toLocaleString('en-US')} credentials of one account, bulk-seeded in ${bulk.seconds.toFixed(1)} s, ` +
      `${fileMb.toFixed(0)} MB file; get rotates over ${bulk.sampleIds.length} ids drawn uniformly from them.\n` +
      `Latencies are medians over rounds of each round's p50/p99; the ratios are medians of per-round ratios (rounds ran back to back).\n`,
  );
  out(table(rows));
  out(`\n${table([['credentials', 'peak RSS MB'], [small, fmt.mb(peak[small]!)], [large, fmt.mb(peak[large]!)]])}`);
  out(`\n${targetsTable(targets)}`);
  if (failed > 0) reportFailures(results, out);

  return {
    ok: failed === 0,
    json: {
      settings: { ...settings, small: SMALL, large: options.scaleRows, logLevel: BURROW_LOG_LEVEL, server: ctx.command.describe },
      seeding: { seconds: bulk.seconds, rowsPerSecond: options.scaleRows / bulk.seconds, databaseMb: fileMb },
      scenarios: Object.fromEntries(options.scenarios.map((name) => [name, { describe: SCENARIOS[name]!.describe, ratios: ratios[name], ...results[name] }])),
      peakRssMb: peak,
      targets,
      nonSuccess: failed,
    },
  };
}
