import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { api, generateApiKey } from '../test/helpers/server-process.js';
import { describePlacement, roundSettings, shuffled, type ModeResult, type RunContext } from './context.js';
import { analyseProfile, componentTable, describeProfile, type ProfileSummary } from './cpuprofile.js';
import { LoadGenerator, type LoadJob, type LoadResult } from './load.js';
import { analysePerf, PERF_NODE_FLAGS, perfUsable, recordPerf, type PerfSummary } from './perf-profile.js';
import { BURROW_LOG_LEVEL, startBaseline, startBurrow } from './processes.js';
import { fmt, heading, table } from './report.js';
import { SCENARIOS, type Seeded } from './scenarios.js';
import { seedCredentialsOverHttp, seedEdgeWithPolicy } from './seed.js';

const SAMPLING_INTERVAL_US = 250;

interface ScenarioProfile {
  v8: { load: LoadResult; requests: number; profile: ProfileSummary; file: string };
  perf?: { load: LoadResult; summary: PerfSummary };
}

/**
 * --profile: per scenario, a database seeded by a plain server, then
 *   1. a server under `node --cpu-prof`, loaded for warm-up + rounds × duration seconds; the
 *      profile (written when it stops) is summarised by component, package and function;
 *   2. when `perf` works here, a server with perf-map support under `perf record` for the same
 *      load: on-CPU time of the main thread by component, which V8's wall-clock samples blur.
 */
export async function runProfile(ctx: RunContext): Promise<ModeResult> {
  const { options, log, out } = ctx;
  const settings = roundSettings(options);
  const seconds = settings.seconds * settings.rounds;
  const withPerf = perfUsable();
  if (!withPerf) log('perf is not usable here: only the V8 profile');
  const load = new LoadGenerator();
  const results: Record<string, ScenarioProfile> = {};
  let baseline: { scenario: string; load: LoadResult; requests: number; profile: ProfileSummary } | undefined;
  let failed = 0;
  const count = (r: LoadResult | undefined) => (r ? r.non2xx + r.errors + r.timeouts : 0);

  /** A fresh server on the seeded database, loaded: warm-up, then `during` wraps the measured run. */
  const loadServer = async (
    databaseUrl: string,
    apiKey: string,
    seeded: Seeded,
    name: string,
    nodeFlags: string[],
    during: (pid: number, run: () => Promise<LoadResult>) => Promise<LoadResult>,
  ) => {
    const server = await startBurrow({ name: `burrow (${name})`, command: ctx.command, databaseUrl, apiKey, nodeFlags });
    try {
      const job: Omit<LoadJob, 'seconds'> = { url: server.baseUrl, connections: settings.connections, spec: SCENARIOS[name]!.spec(seeded) };
      const warmup = settings.warmupSeconds > 0 ? await load.run({ ...job, seconds: settings.warmupSeconds }) : undefined;
      const result = await during(server.pid, () => load.run({ ...job, seconds }));
      failed += count(warmup) + count(result);
      return { warmup, result };
    } finally {
      await server.stop();
    }
  };

  try {
    for (const name of options.scenarios) {
      const apiKey = generateApiKey();
      const databaseUrl = `sqlite:${join(ctx.dir, `profile-${name}.db`)}`;
      const seeder = await startBurrow({ name: 'burrow (seeding)', command: ctx.command, databaseUrl, apiKey });
      const target = { baseUrl: seeder.baseUrl, apiKey };
      const credentialIds = shuffled(await seedCredentialsOverHttp(target, 1000));
      const edgeId = name === 'policy' ? await seedEdgeWithPolicy(target, 10) : undefined;
      const sampleBody = (await api(target, 'GET', `/credentials/${credentialIds[0]}`)).text;
      await seeder.stop();
      const seeded: Seeded = { apiKey, credentialIds, ...(edgeId ? { edgeId } : {}) };

      if (!baseline) {
        // The floor: the bare node:http baseline under the same requests, profiled the same way.
        const dir = join(ctx.dir, 'profile-baseline');
        mkdirSync(dir);
        const server = await startBaseline(sampleBody, ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${SAMPLING_INTERVAL_US}`]);
        log(`baseline: V8 profile of ${seconds} s of ${name} load …`);
        let warmup: LoadResult | undefined;
        let result: LoadResult;
        try {
          const job = { url: server.baseUrl, connections: settings.connections, spec: SCENARIOS[name]!.spec(seeded) };
          warmup = settings.warmupSeconds > 0 ? await load.run({ ...job, seconds: settings.warmupSeconds }) : undefined;
          result = await load.run({ ...job, seconds });
        } finally {
          await server.stop();
        }
        const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
        if (!file) throw new Error(`no .cpuprofile was written to ${dir}`);
        baseline = { scenario: name, load: result, requests: result.requests + (warmup?.requests ?? 0), profile: analyseProfile(join(dir, file)) };
      }

      const profileDir = join(ctx.dir, `profile-${name}`);
      mkdirSync(profileDir);
      log(`${name}: V8 profile of ${seconds} s of load …`);
      const v8Flags = ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-interval=${SAMPLING_INTERVAL_US}`];
      const v8 = await loadServer(databaseUrl, apiKey, seeded, name, v8Flags, (_pid, run) => run());
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error(`no .cpuprofile was written to ${profileDir}`);
      results[name] = {
        v8: {
          load: v8.result,
          requests: v8.result.requests + (v8.warmup?.requests ?? 0), // the profile covers the warm-up too
          profile: analyseProfile(join(profileDir, file)),
          file: join(profileDir, file),
        },
      };
      log(`${name}: ${fmt.rate(v8.result.reqPerSec)} req/s under the V8 profiler`);

      if (withPerf) {
        log(`${name}: perf record of ${seconds} s of load …`);
        const perfFile = join(profileDir, 'perf.data');
        let pid = 0;
        const measured = await loadServer(databaseUrl, apiKey, seeded, name, PERF_NODE_FLAGS, async (serverPid, run) => {
          pid = serverPid;
          const recording = recordPerf(serverPid, perfFile);
          try {
            return await run();
          } finally {
            await recording.stop();
          }
        });
        results[name]!.perf = { load: measured.result, summary: await analysePerf(perfFile, pid) };
        log(`${name}: ${fmt.rate(measured.result.reqPerSec)} req/s under perf`);
      }
    }
  } finally {
    await load.close();
  }

  out(heading('burrow CPU profile'));
  out(
    `${ctx.command.describe}, LOG_LEVEL=${BURROW_LOG_LEVEL}, ${settings.connections} connections, ${seconds} s of load after ${settings.warmupSeconds} s warm-up; ${describePlacement(options)}.\n` +
      `V8: node --cpu-prof, ${SAMPLING_INTERVAL_US} µs sampling of wall-clock time while the main thread is not idle, from the first request on.\n` +
      `perf: perf record -F 999 -g on-CPU samples of the main thread during the measured load (node --perf-basic-prof).\n` +
      `V8's wall-clock samples charge time spent preempted or in a syscall to the function that made it (writev, SQLite's locks),\n` +
      `so prefer the perf table for CPU shares and the V8 tables for which JavaScript functions.`,
  );
  if (baseline) {
    const b = baseline;
    out(heading(`baseline (bare node:http) under the ${b.scenario} requests: the floor`));
    out(
      `V8: ${fmt.rate(b.load.reqPerSec)} req/s under the profiler; main thread busy ${b.profile.busyMs.toFixed(0)} ms of ` +
        `${b.profile.wallMs.toFixed(0)} ms (${((100 * b.profile.busyMs) / b.profile.wallMs).toFixed(0)}%), ${b.requests.toLocaleString('en-US')} requests profiled\n`,
    );
    out(componentTable('busy (wall) time by component, V8 profile', b.profile.byComponent.slice(0, 8), b.profile.busyMs, b.requests));
  }
  for (const [name, { v8, perf }] of Object.entries(results)) {
    out(heading(`${name}: ${SCENARIOS[name]!.describe}`));
    if (perf) {
      const s = perf.summary;
      out(
        `perf: ${fmt.rate(perf.load.reqPerSec)} req/s; main thread on CPU ${s.mainMs.toFixed(0)} ms in ${seconds} s ` +
          `(${((100 * s.mainMs) / (seconds * 1000)).toFixed(0)}% of a core), other threads ${s.otherThreadsMs.toFixed(0)} ms ` +
          `(${s.otherThreads.slice(0, 4).map((t) => `${t.name} ${t.ms.toFixed(0)}`).join(', ')})\n`,
      );
      out(componentTable('main-thread CPU time by component (perf)', s.byComponent, s.mainMs, perf.load.requests));
      out('');
      out(table([['main-thread CPU time by where it ran (perf)', 'ms', '%'], ...s.byDso.map((d) => [d.name, d.ms.toFixed(0), d.pct.toFixed(1)])]));
      out('');
    }
    out(
      `V8: ${fmt.rate(v8.load.reqPerSec)} req/s under the profiler; main thread busy ${v8.profile.busyMs.toFixed(0)} ms of ` +
        `${v8.profile.wallMs.toFixed(0)} ms (${((100 * v8.profile.busyMs) / v8.profile.wallMs).toFixed(0)}%), ` +
        `${v8.requests.toLocaleString('en-US')} requests profiled${options.keep ? `\nprofile: ${v8.file}` : ''}\n`,
    );
    out(describeProfile(v8.profile, v8.requests));
  }
  return {
    ok: failed === 0,
    json: {
      settings: { ...settings, profiledSeconds: seconds, samplingIntervalUs: SAMPLING_INTERVAL_US, perf: withPerf, server: ctx.command.describe },
      baseline,
      scenarios: results,
      nonSuccess: failed,
    },
  };
}
