import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import ngrok from '@ngrok/ngrok';
import { freePortRange, freePorts, withFreshPorts } from './ports.js';
import { api, makeTempDir, PROJECT_ROOT, startServer, type ServerProcess, type StartOptions } from './server-process.js';

/**
 * The data plane for the traffic suites (ports from data-plane.ts): a real `burrow serve` with the agent port and the public
 * ports on, credentials made through the API, and the official SDK as the agent (in this
 * process, or in a child process a test can kill).
 */

export interface TrafficServer extends ServerProcess {
  agentPort: number;
  httpPort: number;
  tlsPort: number;
  tcpPorts: { first: number; last: number };
  tlsDir: string;
  caPath: string;
  edgeDomain: string;
}

/** A port free right now on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

export async function startDataPlane(options: StartOptions & { tcpPortCount?: number } = {}): Promise<TrafficServer> {
  const pick = async () => {
    const [agentPort, httpPort, tlsPort] = (await freePorts(3)) as [number, number, number];
    return { agentPort, httpPort, tlsPort, tcpPorts: await freePortRange(options.tcpPortCount ?? 4) };
  };
  return withFreshPorts(pick, async ({ agentPort, httpPort, tlsPort, tcpPorts }) => {
    const tlsDir = makeTempDir('burrow-tls-');
    const edgeDomain = 'burrow.localhost';
    const server = await startServer({
      ...options,
      env: {
        AGENT_PORT: String(agentPort),
        EDGE_HTTP_PORT: String(httpPort),
        EDGE_TLS_PORT: String(tlsPort),
        EDGE_TCP_PORTS: `${tcpPorts.first}-${tcpPorts.last}`,
        EDGE_DOMAIN: edgeDomain,
        TLS_DIR: tlsDir,
        LOG_LEVEL: 'info',
        ...options.env,
      },
    });
    return Object.assign(server, { agentPort, httpPort, tlsPort, tcpPorts, tlsDir, caPath: join(tlsDir, 'ca.pem'), edgeDomain });
  });
}

/** A credential's token (no ACL: binds anything). */
export async function createToken(server: TrafficServer, acl: string[] = []): Promise<string> {
  const response = await api(server, 'POST', '/credentials', { body: { description: 'traffic test', acl } });
  if (response.status !== 201) throw new Error(`credential: ${response.status} ${response.text}`);
  return response.body.token as string;
}

/** An SDK session in this process. */
export async function connectAgent(server: TrafficServer, token: string): Promise<ngrok.Session> {
  return new ngrok.SessionBuilder().authtoken(token).serverAddr(`127.0.0.1:${server.agentPort}`).caCert(readFileSync(server.caPath)).connect();
}

/** What the agent child process binds (test/helpers/agent-child.ts). */
export interface ChildEndpoint {
  kind: 'tcp' | 'tls' | 'http' | 'https';
  forward: string;
  domain?: string;
  remoteAddr?: string;
  pooling?: boolean;
}

export interface AgentChild {
  child: ChildProcess;
  urls: string[];
  kill(): Promise<void>;
}

/** An SDK agent in a child process (so a test can kill it); resolves once its listeners are bound. */
export async function spawnAgent(server: TrafficServer, token: string, endpoints: ChildEndpoint[]): Promise<AgentChild> {
  const script = fileURLToPath(new URL('./agent-child.ts', import.meta.url));
  const config = JSON.stringify({ serverAddr: `127.0.0.1:${server.agentPort}`, caPath: server.caPath, token, endpoints });
  const child = spawn(process.execPath, ['--import', 'tsx', script, config], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  process.once('exit', () => child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout! });
  const urls = await new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the agent child did not bind in time')), 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      const parsed = JSON.parse(line) as { urls?: string[]; error?: string };
      if (parsed.urls) resolve(parsed.urls);
      else reject(new Error(`agent child: ${parsed.error}`));
    });
    child.once('exit', () => reject(new Error('the agent child exited before binding')));
  }).catch(async (error: unknown) => {
    await kill();
    throw error;
  });
  return { child, urls, kill };
}

/** `host` and `port` of a `tcp://host:port` URL. */
export function hostPort(url: string): { host: string; port: number } {
  const parsed = new URL(url.replace(/^(tcp|tls):/, 'http:'));
  const port = parsed.port ? Number(parsed.port) : 443;
  return { host: parsed.hostname, port };
}

/** Reads the server's /proc VmRSS, in bytes. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  if (!match) throw new Error('no VmRSS');
  return Number(match[1]) * 1024;
}

/** Retries `probe` until it holds, for at most `ms` (polling every 50 ms); returns how long it took. */
export async function within(ms: number, probe: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
