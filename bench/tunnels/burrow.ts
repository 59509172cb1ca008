import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, generateApiKey } from '../../test/helpers/server-process.js';
import type { RunContext } from '../context.js';
import { BURROW_LOG_LEVEL, startBurrow, startNodeProcess, type ServerChild } from '../processes.js';
import { freePort, portOf, type LocalServers, type Path, type Route } from './paths.js';

/**
 * burrow with its data plane on (free ports, a temporary TLS_DIR, no session limit), one
 * credential, and the official SDK as its agent in a process of its own.
 */
export const EDGE_DOMAIN = 'burrow.localhost';
export const TLS_ENDPOINT_HOST = `bench-tls.${EDGE_DOMAIN}`;
export const TLS_EDGE_HOST = `bench-edge.${EDGE_DOMAIN}`;
const EDGE_LABELS = { bench: 'edge' };
const DENY_ALL = JSON.stringify({ on_tcp_connect: [{ name: 'deny all', actions: [{ type: 'deny' }] }] });
const AGENT_SCRIPT = fileURLToPath(new URL('./agent.ts', import.meta.url));

export interface BurrowDataPlane {
  server: ServerChild;
  apiKey: string;
  token: string;
  agentPort: number;
  httpPort: number;
  tlsPort: number;
  caPath: string;
}

export async function startBurrowDataPlane(ctx: RunContext, nodeFlags: string[] = []): Promise<BurrowDataPlane> {
  const [agentPort, httpPort, tlsPort] = [await freePort(), await freePort(), await freePort()];
  const tcpPorts = await freePortRange(8);
  const tlsDir = join(ctx.dir, 'tls');
  const apiKey = generateApiKey();
  const databaseUrl = `sqlite:${join(ctx.dir, 'tunnels.db')}`;
  ctx.log(`starting burrow (${ctx.command.describe}, SQLite file, LOG_LEVEL=${BURROW_LOG_LEVEL}, data plane on: agent ${agentPort}, http ${httpPort}, tls ${tlsPort}, tcp ${tcpPorts})`);
  const server = await startBurrow({
    name: 'burrow',
    command: ctx.command,
    databaseUrl,
    apiKey,
    nodeFlags,
    env: {
      AGENT_PORT: String(agentPort),
      EDGE_HTTP_PORT: String(httpPort),
      EDGE_TLS_PORT: String(tlsPort),
      EDGE_TCP_PORTS: tcpPorts,
      EDGE_DOMAIN,
      TLS_DIR: tlsDir,
      MAX_SESSIONS_PER_ACCOUNT: '0',
      // every load client is 127.0.0.1: the per-client share would cap the streams scenario at 250
      EDGE_TCP_CONNECTIONS_PER_CLIENT: '0',
    },
  });
  const credential = await api<{ token: string }>({ baseUrl: server.baseUrl, apiKey }, 'POST', '/credentials', { body: { description: 'bench agent' } });
  if (credential.status !== 201) throw new Error(`POST /credentials answered ${credential.status}: ${credential.text}`);
  return { server, apiKey, token: credential.body.token, agentPort, httpPort, tlsPort, caPath: join(tlsDir, 'ca.pem') };
}

async function freePortRange(count: number): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 21_000 + Math.floor(Math.random() * 20_000);
    const ports = await Promise.all(Array.from({ length: count }, (_, i) => isFree(first + i)));
    if (ports.every(Boolean)) return `${first}-${first + count - 1}`;
  }
  throw new Error('no range of free ports for EDGE_TCP_PORTS');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** What the agent binds (bench/tunnels/agent.ts). */
export interface AgentEndpoint {
  name: string;
  kind: 'tcp' | 'http' | 'tls' | 'labeled';
  forward: string;
  domain?: string;
  policy?: string;
  labels?: Record<string, string>;
}

export interface Agent {
  child: ServerChild;
  /** Heartbeat rounds (idle sessions): how many sessions saw one answered within `ms`. */
  heartbeats(ms: number): Promise<{ answered: number; of: number }>;
}

export async function startAgent(plane: BurrowDataPlane, name: string, config: { endpoints?: AgentEndpoint[]; sessions?: number; idleForward?: string }, timeoutMs = 60_000): Promise<{ agent: Agent; ready: { urls?: Record<string, string>; errors?: Record<string, string>; sessions?: number } }> {
  const env = {
    BENCH_AGENT: JSON.stringify({ serverAddr: `127.0.0.1:${plane.agentPort}`, caPath: plane.caPath, token: plane.token, ...config }),
  };
  const child = await startNodeProcess(name, ['--import', 'tsx', AGENT_SCRIPT], env, (line) => (line.startsWith('ready ') ? line.slice(6) : undefined), { timeoutMs });
  const heartbeats = async (ms: number) => {
    const seen = child.output.length;
    child.child.stdin!.write(`heartbeats ${ms}\n`);
    const deadline = Date.now() + ms + 10_000;
    for (;;) {
      const line = child.output.slice(seen).find((l) => l.startsWith('heartbeats '));
      if (line) return JSON.parse(line.slice('heartbeats '.length)) as { answered: number; of: number };
      if (Date.now() > deadline) return { answered: 0, of: NaN };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return { agent: { child, heartbeats }, ready: JSON.parse(child.baseUrl) };
}

/**
 * A TLS edge on TLS_EDGE_HOST whose backend is a tunnel group of EDGE_LABELS; undefined with the
 * reason when this build does not serve tunnel groups (404/400) or the edge cannot be made.
 */
export async function createTlsEdge(plane: BurrowDataPlane): Promise<{ edgeId: string } | { unavailable: string }> {
  const target = { baseUrl: plane.server.baseUrl, apiKey: plane.apiKey };
  const group = await api<{ id: string }>(target, 'POST', '/backends/tunnel_group', { body: { labels: EDGE_LABELS } });
  if (group.status === 404 || group.status === 400) return { unavailable: `POST /backends/tunnel_group answered ${group.status}: TLS edges with tunnel-group backends are not in this build` };
  if (group.status !== 201) return { unavailable: `POST /backends/tunnel_group answered ${group.status}: ${group.text.slice(0, 200)}` };
  const edge = await api<{ id: string }>(target, 'POST', '/edges/tls', { body: { description: 'bench edge', hostports: [`${TLS_EDGE_HOST}:443`] } });
  if (edge.status !== 201) return { unavailable: `POST /edges/tls answered ${edge.status}: ${edge.text.slice(0, 200)}` };
  const backend = await api(target, 'PUT', `/edges/tls/${edge.body.id}/backend`, { body: { enabled: true, backend_id: group.body.id } });
  if (backend.status !== 200) return { unavailable: `PUT /edges/tls/{id}/backend answered ${backend.status}: ${backend.text.slice(0, 200)}` };
  return { edgeId: edge.body.id };
}

/** The main agent's endpoints: one per local server, the policy endpoint, the edge's labeled tunnel. */
export function agentEndpoints(local: LocalServers, policy: string | undefined, edge: boolean, httpPolicy?: string): AgentEndpoint[] {
  const tcp = `tcp://127.0.0.1:${portOf(local.tcp)}`;
  const tls = `tcp://127.0.0.1:${portOf(local.tls)}`;
  const http = `http://127.0.0.1:${portOf(local.http)}`;
  return [
    { name: 'tcp', kind: 'tcp', forward: tcp },
    { name: 'http', kind: 'http', forward: http },
    // the same endpoint with the ten-rule on_http_request policy (http-policy scenario)
    ...(httpPolicy ? [{ name: 'http-policy', kind: 'http' as const, forward: http, policy: httpPolicy }] : []),
    ...(policy
      ? [
          { name: 'tcp-policy', kind: 'tcp' as const, forward: tcp, policy },
          // The control: if a connection gets through this one, policies are not enforced and the scenario would measure nothing.
          { name: 'tcp-deny', kind: 'tcp' as const, forward: tcp, policy: DENY_ALL },
        ]
      : []),
    // TLS passes through burrow and the agent (tcp:// forwards the bytes as they are) to the local TLS server.
    { name: 'tls', kind: 'tls', forward: tls, domain: TLS_ENDPOINT_HOST },
    ...(edge ? [{ name: 'edge', kind: 'labeled' as const, forward: tls, labels: EDGE_LABELS }] : []),
  ];
}

/** burrow's routes, from the URLs the agent printed. */
export function burrowRoutes(plane: BurrowDataPlane, agent: Agent, urls: Record<string, string>): { path: Path; tcpPolicy?: Route; tcpDeny?: Route; httpPolicy?: Route; tlsEndpoint?: Route; tlsEdge?: Route } {
  const pids = [plane.server.pid, agent.child.pid];
  const tcpRoute = (url: string | undefined): Route | undefined => {
    if (!url) return undefined;
    const parsed = new URL(url);
    return { host: parsed.hostname, port: Number(parsed.port), pids };
  };
  const httpRoute = (url: string | undefined): Route | undefined => (url ? { host: '127.0.0.1', port: plane.httpPort, hostHeader: new URL(url).hostname, pids } : undefined);
  const http = httpRoute(urls.http);
  const httpPolicy = httpRoute(urls['http-policy']);
  const tls = (servername: string): Route => ({ host: '127.0.0.1', port: plane.tlsPort, servername, pids });
  const tcp = tcpRoute(urls.tcp);
  const tcpPolicy = tcpRoute(urls['tcp-policy']);
  const tcpDeny = tcpRoute(urls['tcp-deny']);
  return {
    path: { name: 'burrow', ...(tcp ? { tcp } : {}), ...(http ? { http } : {}) },
    ...(tcpPolicy ? { tcpPolicy } : {}),
    ...(tcpDeny ? { tcpDeny } : {}),
    ...(httpPolicy ? { httpPolicy } : {}),
    ...(urls.tls ? { tlsEndpoint: tls(TLS_ENDPOINT_HOST) } : {}),
    ...(urls.edge ? { tlsEdge: tls(TLS_EDGE_HOST) } : {}),
  };
}

/** burrow's own view of its memory (GET /metrics, prom-client's process gauges), for the run's log. */
export async function burrowMemory(plane: BurrowDataPlane): Promise<string> {
  try {
    const text = await (await fetch(`${plane.server.baseUrl}/metrics`)).text();
    const gauge = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`;
    return `heap used ${mb(gauge('nodejs_heap_size_used_bytes'))} of ${mb(gauge('nodejs_heap_size_total_bytes'))}, external ${mb(gauge('nodejs_external_memory_bytes'))}, handles ${gauge('nodejs_active_handles_total')}`;
  } catch (error) {
    return `memory unknown (${(error as Error).message})`;
  }
}

/** The id of the endpoint behind `url` (GET /endpoints), for the traffic inspector's routes. */
export async function endpointIdOf(plane: BurrowDataPlane, url: string): Promise<string | undefined> {
  const listed = await api<{ endpoints: { id: string; url: string }[] }>({ baseUrl: plane.server.baseUrl, apiKey: plane.apiKey }, 'GET', '/endpoints');
  return listed.status === 200 ? listed.body.endpoints.find((e) => e.url === url)?.id : undefined;
}

/** PATCH /traffic_inspection: the account's capture (CONSOLE.md §2). */
export async function setCapture(plane: BurrowDataPlane, capture: 'off' | 'heads' | 'bodies'): Promise<void> {
  const answer = await api({ baseUrl: plane.server.baseUrl, apiKey: plane.apiKey }, 'PATCH', '/traffic_inspection', { body: { capture } });
  if (answer.status !== 200) throw new Error(`PATCH /traffic_inspection answered ${answer.status}: ${answer.text.slice(0, 200)}`);
}

/** How many requests of the endpoint the traffic inspector holds (at most one page of 100: enough to tell none from some). */
export async function capturedRequests(plane: BurrowDataPlane, endpointId: string): Promise<number> {
  const listed = await api<{ requests: unknown[] }>({ baseUrl: plane.server.baseUrl, apiKey: plane.apiKey }, 'GET', `/endpoints/${endpointId}/requests?limit=100`);
  return listed.status === 200 ? listed.body.requests.length : NaN;
}
