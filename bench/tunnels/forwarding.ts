import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import type { RunContext } from '../context.js';
import { fmt, type Target } from '../report.js';
import { alternateWith, failures, pairedRatio, type Figures } from '../rounds.js';
import { startBurrow, type ServerChild } from '../processes.js';
import { api, generateApiKey } from '../../test/helpers/server-process.js';
import { EDGE_DOMAIN, startAgent, type Agent } from './burrow.js';
import { freePort, portOf, type LocalServers, type Route } from './paths.js';
import { probeEcho, probeHttp } from './probe.js';
import { figuresTable, lanes, outcome, splitCpu, tcpTarget, type ScenarioOutcome, type ScenarioTools } from './scenarios.js';
import { SMALL_BODY } from './wire.js';

/**
 * CLUSTER.md §2's cost of a forwarded hop: two instances on one PostgreSQL schema (each its own
 * loopback address, identical edge ports), one SDK agent on the first; the same endpoints reached
 * through the holding instance and through the other, which forwards over the inter-instance
 * link. Keep-alive GET (added p50 ≤ 0.6 ms, throughput ≥ 0.7×) and bulk (throughput ≥ 0.7×).
 * Skipped, saying why, without PostgreSQL or when the second instance does not forward.
 */
const POSTGRES = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const HOLDING = 'holding instance';
const FORWARDING = 'forwarding instance';

interface TwoInstances {
  holding: ServerChild;
  forwarding: ServerChild;
  agent: Agent;
  routes: { http: Map<string, Route>; tcp: Map<string, Route> };
  close(): Promise<void>;
}

export async function forwardingScenario(ctx: RunContext, t: ScenarioTools, local: LocalServers): Promise<ScenarioOutcome> {
  const describe = 'the same endpoints through a forwarding instance vs the holding instance (two instances, one PostgreSQL schema)';
  let two: TwoInstances | undefined;
  try {
    const started = await startTwoInstances(ctx, local);
    if ('skip' in started) return skipped(describe, started.skip);
    two = started;
    const { http, tcp } = two.routes;
    const names = new Map([[two.holding.pid, 'holding burrow'], [two.forwarding.pid, 'forwarding burrow'], [two.agent.child.pid, 'agent']]);
    const get = await alternateWith('fwd http', lanes(http, local.http.pid), t.settings, t.log, splitCpu(names, (c, seconds) =>
      t.load.run({ url: c.baseUrl, connections: 16, seconds, spec: { method: 'GET', path: '/', headers: { host: c.route.hostHeader! } } }),
    ));
    const bulkSettings = { ...t.settings, seconds: 1, warmupSeconds: t.settings.warmupSeconds > 0 ? 1 / 8 : 0 };
    const bytes = Math.round(t.options.bulkMb * 1e6);
    const bulk = await alternateWith('fwd bulk', lanes(tcp, local.tcp.pid), bulkSettings, t.log, splitCpu(names, (c, share) =>
      t.tcp.run({ kind: 'bulk', target: tcpTarget(c.route), direction: 'down', bytes: Math.round(bytes * share) }),
    ), 'MB/s');
    const targets = [...versusHolding('keep-alive GET', get, true), ...versusHolding('bulk down', bulk, false)];
    const body = `keep-alive GET /, 16 connections:\n${figuresTable(get, 'req/s', 'µs/req', HOLDING)}\n\nbulk down, ${t.options.bulkMb} MB:\n${figuresTable(bulk, 'MB/s', 'µs/transfer', HOLDING)}`;
    return outcome('forwarding', describe, body, targets, {}, { get, bulk });
  } finally {
    await two?.close();
  }
}

function versusHolding(label: string, results: Record<string, Figures>, latency: boolean): Target[] {
  const holding = results[HOLDING]!;
  const forwarded = results[FORWARDING]!;
  const ratio = pairedRatio(forwarded, holding, (r) => r.reqPerSec);
  const failed = failures(forwarded) + failures(holding);
  const targets: Target[] = [{ name: `${label} through a forwarding instance vs the holding one`, goal: '≥ 0.7×', measured: `${fmt.preciseRatio(ratio)}${failed ? ` (${failed} failed)` : ''}`, met: ratio >= 0.7 && failed === 0, judged: true }];
  if (latency) {
    const added = forwarded.p50 - holding.p50;
    targets.push({ name: `${label}: p50 added by the forwarded hop`, goal: '≤ 0.6 ms', measured: `${added.toFixed(2)} ms`, met: added <= 0.6, judged: true });
  }
  return targets;
}

function skipped(describe: string, why: string): ScenarioOutcome {
  return { name: 'forwarding', describe, text: `forwarding: not measured — ${why}; skipped.`, targets: [], ratios: {}, json: { skipped: why } };
}

async function startTwoInstances(ctx: RunContext, local: LocalServers): Promise<TwoInstances | { skip: string }> {
  const schema = `bench_fwd_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES, connectionTimeoutMillis: 2_000 });
  try {
    await admin.connect();
    await admin.end();
  } catch {
    return { skip: `two instances need PostgreSQL (${POSTGRES}, or BENCH_DATABASE_URL), which does not answer` };
  }
  const url = new URL(POSTGRES);
  url.searchParams.set('schema', schema);
  const [httpPort, tlsPort, link, agentA, agentB] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const tcpPort = await freePort();
  const apiKey = generateApiKey();
  const secret = randomBytes(32).toString('hex');
  const start = (k: number, agentPort: number) =>
    startBurrow({
      name: `burrow ${k}`,
      command: ctx.command,
      databaseUrl: url.toString(),
      logDir: ctx.dir,
      apiKey,
      env: {
        AGENT_PORT: String(agentPort),
        EDGE_HOST: `127.0.1.${k}`,
        EDGE_HTTP_PORT: String(httpPort),
        EDGE_TLS_PORT: String(tlsPort),
        EDGE_TCP_PORTS: String(tcpPort),
        EDGE_DOMAIN,
        TLS_DIR: join(ctx.dir, `tls-${k}`),
        CLUSTER_SECRET: secret,
        CLUSTER_ADDR: `127.0.1.${k}:${link}`,
        MAX_SESSIONS_PER_ACCOUNT: '0',
        EDGE_TCP_CONNECTIONS_PER_CLIENT: '0',
      },
    });
  const dropSchema = async () => {
    const client = new pg.Client({ connectionString: POSTGRES });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`).finally(() => client.end());
  };
  const holding = await start(1, agentA).catch(async (error: unknown) => {
    await dropSchema().catch(() => {});
    throw error;
  });
  const forwarding = await start(2, agentB).catch(async (error: unknown) => {
    await holding.stop();
    await dropSchema().catch(() => {});
    throw error;
  });
  const credential = await api<{ token: string }>({ baseUrl: holding.baseUrl, apiKey }, 'POST', '/credentials', { body: { description: 'bench forwarding' } });
  const plane = { server: holding, apiKey, token: credential.body.token, agentPort: agentA, httpPort, tlsPort, caPath: join(ctx.dir, 'tls-1', 'ca.pem') };
  const { agent, ready } = await startAgent(plane, 'forwarding agent', {
    endpoints: [
      { name: 'http', kind: 'http', forward: `http://127.0.0.1:${portOf(local.http)}`, domain: `bench-fwd.${EDGE_DOMAIN}` },
      { name: 'tcp', kind: 'tcp', forward: `tcp://127.0.0.1:${portOf(local.tcp)}` },
    ],
  });
  const close = async () => {
    await agent.child.stop();
    await Promise.all([holding.stop(), forwarding.stop()]);
    await dropSchema().catch(() => {});
  };
  const pids = (server: ServerChild) => [server.pid, holding.pid, agent.child.pid].filter((pid, i, all) => all.indexOf(pid) === i);
  const routes = { http: new Map<string, Route>(), tcp: new Map<string, Route>() };
  for (const [name, k, server] of [[HOLDING, 1, holding], [FORWARDING, 2, forwarding]] as const) {
    routes.http.set(name, { host: `127.0.1.${k}`, port: httpPort, hostHeader: `bench-fwd.${EDGE_DOMAIN}`, pids: pids(server) });
    routes.tcp.set(name, { host: `127.0.1.${k}`, port: Number(new URL(ready.urls?.tcp ?? `tcp://x:${tcpPort}`).port), pids: pids(server) });
  }
  const probe = async (name: string) => (await probeHttp(routes.http.get(name)!, SMALL_BODY)) ?? (await probeEcho(routes.tcp.get(name)!));
  const holdingProblem = await probe(HOLDING);
  // forwarding exists when the second instance carries a probe to the first one's agent (binds reach it within 1 s)
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const problem = holdingProblem === undefined ? await probe(FORWARDING) : undefined;
  if (holdingProblem !== undefined || problem !== undefined) {
    await close();
    return {
      skip: holdingProblem !== undefined
        ? `the holding instance did not carry a probe (${holdingProblem})`
        : `the instance that does not hold the agent did not carry a probe (${problem}): forwarding between instances is not in this build`,
    };
  }
  return { holding, forwarding, agent, routes, close };
}
