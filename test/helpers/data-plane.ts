import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { freePortRange, freePorts, withFreshPorts } from './ports.js';
import { api, makeTempDir, runCli, startServer, type ServerProcess, type StartOptions } from './server-process.js';

export { freePortRange, freePorts } from './ports.js';

/**
 * Real `burrow serve` processes with the data plane on, for the agent suites: free ports for
 * AGENT_PORT and the edge listeners, a temporary TLS_DIR, a small EDGE_TCP_PORTS range.
 */

export interface DataPlaneEnv {
  /** The environment to give `startServer` (pass it again to restart on the same ports). */
  env: Record<string, string>;
  agentPort: number;
  httpPort: number;
  tlsPort: number;
  tcpPorts: { first: number; last: number };
  tlsDir: string;
  /** `localhost:<agentPort>`, the SDK's serverAddr. */
  serverAddr: string;
}

/** Ports and a TLS_DIR for one data-plane server; `extra` is merged into the environment. */
export async function dataPlaneEnv(extra: Record<string, string> = {}, tcpPortCount = 4): Promise<DataPlaneEnv> {
  const [agentPort, httpPort, tlsPort] = (await freePorts(3)) as [number, number, number];
  const tcpPorts = await freePortRange(tcpPortCount);
  const tlsDir = join(makeTempDir('burrow-tls-'), 'tls');
  const env = {
    AGENT_PORT: String(agentPort),
    EDGE_HTTP_PORT: String(httpPort),
    EDGE_TLS_PORT: String(tlsPort),
    EDGE_TCP_PORTS: `${tcpPorts.first}-${tcpPorts.last}`,
    TLS_DIR: tlsDir,
    ...extra,
  };
  return { env, agentPort, httpPort, tlsPort, tcpPorts, tlsDir, serverAddr: `localhost:${agentPort}` };
}

export interface DataPlaneServer extends ServerProcess {
  plane: DataPlaneEnv;
  /** The CA agents must trust (TLS_DIR/ca.pem). */
  caCert(): Buffer;
}

/** Starts `burrow serve` with the data plane on (or again on `plane`'s ports and TLS_DIR). */
export async function startDataPlaneServer(
  options: StartOptions & { plane?: DataPlaneEnv; extraEnv?: Record<string, string> } = {},
): Promise<DataPlaneServer> {
  const start = async (plane: DataPlaneEnv) => {
    const server = await startServer({ ...options, env: { ...plane.env, ...options.env } });
    return Object.assign(server, { plane, caCert: () => readFileSync(join(plane.tlsDir, 'ca.pem')) });
  };
  // a restart must keep its ports; a first start may move to others
  if (options.plane) return start(options.plane);
  return withFreshPorts(() => dataPlaneEnv(options.extraEnv), start);
}

export interface MadeCredential {
  id: string;
  token: string;
}

/** POST /credentials with the given ACL; returns its id and token. */
export async function makeCredential(
  server: Pick<ServerProcess, 'baseUrl' | 'apiKey'>,
  acl: string[] = [],
  key?: string,
): Promise<MadeCredential> {
  const created = await api(server, 'POST', '/credentials', { body: { acl }, ...(key ? { key } : {}) });
  if (created.status !== 201) throw new Error(`POST /credentials: ${created.status} ${created.text}`);
  return { id: created.body.id, token: created.body.token };
}

/** Polls `check` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The ERR_NGROK_<n> an SDK error carries: `errorCode` when set, else parsed from the message. */
export function ngrokCode(error: unknown): { code: string | undefined; source: 'errorCode' | 'message' | 'none' } {
  const err = error as { errorCode?: unknown; message?: unknown };
  if (typeof err?.errorCode === 'string' && err.errorCode !== '') return { code: err.errorCode, source: 'errorCode' };
  const match = /error_code: (ERR_NGROK_\d+)/.exec(String(err?.message ?? ''));
  return match ? { code: match[1], source: 'message' } : { code: undefined, source: 'none' };
}

/** A second account with an admin user and an API key, made with the CLI on the server's database. */
export async function makeAccount(server: Pick<ServerProcess, 'databaseUrl'>, name: string): Promise<{ accountId: string; apiKey: string }> {
  const run = async (...args: string[]) => {
    const result = await runCli(args, { databaseUrl: server.databaseUrl });
    if (result.code !== 0) throw new Error(`burrow ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as Record<string, string>;
  };
  const account = await run('accounts', 'create', '--name', name, '--json');
  const user = await run('users', 'create', '--name', `${name}-admin`, '--account', account.id!, '--admin', '--json');
  const key = await run('api-keys', 'create', '--owner', user.id!, '--json');
  return { accountId: account.id!, apiKey: key.key! };
}

/**
 * A TCP relay in front of a server that restarts: each connection waits (up to `waitMs`) for
 * the target to accept, then bytes flow both ways; when either side ends, so does the other.
 * The ngrok SDK backs off 50 ms, 2.5 s, then 125 s between reconnects: a restart that takes
 * longer than that would leave it waiting two minutes; through the relay its attempt simply
 * takes as long as the restart.
 */
export class WaitingRelay {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Map<net.Socket, net.Socket>();
  port = 0;

  constructor(
    private readonly targetPort: number,
    private readonly waitMs = 30_000,
  ) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => void this.relay(client));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
  }

  private async relay(client: net.Socket): Promise<void> {
    this.sockets.add(client);
    client.on('error', () => {});
    client.once('close', () => this.sockets.delete(client));
    client.pause();
    const deadline = Date.now() + this.waitMs;
    while (!client.destroyed) {
      const upstream = await new Promise<net.Socket | undefined>((resolve) => {
        const socket = net.connect(this.targetPort, '127.0.0.1');
        socket.once('connect', () => resolve(socket));
        socket.once('error', () => resolve(undefined));
      });
      if (upstream) {
        this.sockets.add(upstream);
        upstream.on('error', () => {});
        upstream.once('close', () => {
          this.sockets.delete(upstream);
          client.destroy();
        });
        client.once('close', () => upstream.destroy());
        this.pairs.set(client, upstream);
        client.once('close', () => this.pairs.delete(client));
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        return;
      }
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    client.destroy();
  }

  /**
   * Drops the agents' side only: burrow keeps a half-open connection that looks alive (no
   * FIN, no RST), as after a network failure, while the agent reconnects through the relay.
   */
  dropClients(): void {
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.removeAllListeners('close');
      upstream.removeAllListeners('close');
      upstream.pause();
      client.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
