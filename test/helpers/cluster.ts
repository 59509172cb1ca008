import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { freePortRange, freePorts } from './data-plane.js';
import { makeTempDir, PROJECT_ROOT, startServer, type ServerProcess } from './server-process.js';

/**
 * Several burrow instances on one host behind Debian's HAProxy, configured exactly as README.md's
 * "Behind HAProxy" block says (its addresses 10.0.0.k become 127.0.1.k, the balancer's bind
 * addresses 127.0.0.1, and its ports the test's). Instances share every port number, each on its
 * own loopback address, as CLUSTER.md §1 describes.
 */

export const HAPROXY = '/usr/sbin/haproxy';
const POSTGRES = 'postgres://postgres@127.0.0.1:5432/test';

/** Why the cluster suites cannot run here, or undefined when they can. */
export async function clusterUnavailable(): Promise<string | undefined> {
  if (!existsSync(HAPROXY)) return `needs HAProxy at ${HAPROXY} (.ci/run installs it)`;
  const client = new pg.Client({ connectionString: POSTGRES, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.end();
  } catch {
    return `needs PostgreSQL at ${POSTGRES}`;
  }
  return undefined;
}

export interface ClusterPorts {
  api: number;
  agent: number;
  http: number;
  tls: number;
  link: number;
  tcp: { first: number; last: number };
}

export interface Instance {
  index: number;
  host: string;
  server: ServerProcess;
  tlsDir: string;
}

export interface Cluster {
  ports: ClusterPorts;
  databaseUrl: string;
  apiKey: string;
  instances: Instance[];
  /** The CA agents trust (any instance's copy). */
  caPath: string;
  haproxy: ChildProcess;
  haproxyConfig: string;
  /** Starts an instance again (after a stop or a kill) on its own address, ports and TLS_DIR. */
  restart(instance: Instance): Promise<void>;
  close(): Promise<void>;
}

/** The README's HAProxy block, for the test's addresses and ports. */
export function haproxyConfigFromReadme(ports: ClusterPorts): string {
  const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
  const block = /```haproxy\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README.md has no ```haproxy block');
  const tcpRange = `${ports.tcp.first}-${ports.tcp.last}`;
  return block
    .replace(/^(\s*bind ):(\d+(?:-\d+)?)$/gm, (_all, bind: string, port: string) => `${bind}127.0.0.1:${portFor(port)}`)
    .replace(/10\.0\.0\.(\d+):4443/g, (_all, k: string) => `127.0.1.${k}:${ports.agent}`)
    .replace(/10\.0\.0\.(\d+)/g, '127.0.1.$1')
    .replace(/check port 8080/, `check port ${ports.api}`);

  function portFor(port: string): string {
    const map: Record<string, string> = { '4443': String(ports.agent), '80': String(ports.http), '443': String(ports.tls), '20000-20099': tcpRange };
    const mapped = map[port];
    if (!mapped) throw new Error(`README's HAProxy block binds :${port}, which the suite does not map`);
    return mapped;
  }
}

/** Three (or `count`) instances on one fresh PostgreSQL schema, and HAProxy in front. */
export async function startCluster(count = 3, extraEnv: Record<string, string> = {}): Promise<Cluster> {
  const [api, agent, httpPort, tlsPort, link] = (await freePorts(5)) as [number, number, number, number, number];
  const ports: ClusterPorts = { api, agent, http: httpPort, tls: tlsPort, link, tcp: await freePortRange(4) };
  const schema = `cluster_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const url = new URL(POSTGRES);
  url.searchParams.set('schema', schema);
  const databaseUrl = url.toString();
  const secret = [...Array(64)].map(() => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('');
  const instances: Instance[] = [];
  let apiKey = '';
  const launch = async (index: number, tlsDir: string): Promise<ServerProcess> => {
    const host = `127.0.1.${index + 1}`;
    const env = {
      HOST: host,
      PORT: String(ports.api),
      AGENT_PORT: String(ports.agent),
      EDGE_HTTP_PORT: String(ports.http),
      EDGE_TLS_PORT: String(ports.tls),
      EDGE_TCP_PORTS: `${ports.tcp.first}-${ports.tcp.last}`,
      EDGE_DOMAIN: 'burrow.localhost',
      EDGE_PUBLIC_HOST: '127.0.0.1',
      TLS_DIR: tlsDir,
      CLUSTER_SECRET: secret,
      CLUSTER_ADDR: `${host}:${ports.link}`,
      PROXY_PROTOCOL_FROM: '127.0.0.1',
      SHUTDOWN_GRACE_MS: '5000',
      ...extraEnv,
    };
    return startServer({ databaseUrl, bootstrapApiKey: apiKey || undefined, env });
  };
  // the first creates the CA and bootstraps; the others start together
  const dirs = Array.from({ length: count }, () => join(makeTempDir('burrow-cluster-'), 'tls'));
  const first = await launch(0, dirs[0]!);
  apiKey = first.apiKey;
  const rest = await Promise.all(dirs.slice(1).map((dir, i) => launch(i + 1, dir)));
  for (const [index, server] of [first, ...rest].entries()) instances.push({ index, host: `127.0.1.${index + 1}`, server, tlsDir: dirs[index]! });

  const haproxyConfig = haproxyConfigFromReadme(ports);
  const configPath = join(makeTempDir('burrow-haproxy-'), 'haproxy.cfg');
  writeFileSync(configPath, haproxyConfig);
  const check = spawnSync(HAPROXY, ['-c', '-f', configPath], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`haproxy -c: ${check.stdout}${check.stderr}`);
  const haproxy = spawn(HAPROXY, ['-db', '-f', configPath], { stdio: ['ignore', 'ignore', 'pipe'] });
  haproxy.stderr!.on('data', () => {});
  process.once('exit', () => haproxy.kill('SIGKILL'));
  await waitForPort('127.0.0.1', ports.agent);

  return {
    ports,
    databaseUrl,
    apiKey,
    instances,
    caPath: join(dirs[0]!, 'ca.pem'),
    haproxy,
    haproxyConfig,
    async restart(instance) {
      instance.server = await launch(instance.index, instance.tlsDir);
    },
    async close() {
      if (haproxy.exitCode === null) {
        const exited = new Promise((resolve) => haproxy.once('exit', resolve));
        haproxy.kill('SIGKILL');
        await exited;
      }
      const client = new pg.Client({ connectionString: POSTGRES });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`).finally(() => client.end());
    },
  };
}

async function waitForPort(host: string, port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host, port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `probe` again until it resolves (a bind reaches another instance's routes within 1 s), its last failure thrown after 3 s. */
export async function eventually<T>(probe: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    try {
      return await probe();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

export interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * One GET of `path` on `hostname` at `address:port` (a fresh connection), from `localAddress`
 * (another loopback address than 127.0.0.1: not the balancer's, so no PROXY header is expected).
 * Rejects with the socket error's code on a refused or reset connection, or 'timeout' after `timeoutMs`.
 */
export function get(address: string, port: number, hostname: string, path = '/', options: { localAddress?: string; timeoutMs?: number } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: address, port, path, headers: { host: hostname, connection: 'close' }, localAddress: options.localAddress ?? '127.0.0.2', agent: false });
    const timer = setTimeout(() => {
      request.destroy();
      reject(Object.assign(new Error('timeout'), { code: 'timeout' }));
    }, options.timeoutMs ?? 5_000);
    request.once('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('end', () => {
        clearTimeout(timer);
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: response.headers });
      });
      response.once('error', (error) => {
        clearTimeout(timer);
        reject(Object.assign(error, { code: 'truncated' }));
      });
    });
    request.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end();
  });
}

/** A local HTTP service: answers `served <path> xff=<X-Forwarded-For>`; /slow after 1.5 s. */
export async function startEchoService(): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const answer = () => response.end(`served ${request.url} xff=${request.headers['x-forwarded-for'] ?? ''}`);
    if (request.url === '/slow') setTimeout(answer, 1_500);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
