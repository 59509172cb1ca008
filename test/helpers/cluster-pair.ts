import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePortRange, freePorts } from './data-plane.js';
import { generateApiKey, makeTempDir, startServer, type ServerProcess } from './server-process.js';

/** The two instances' EDGE_HOSTs: each on its own loopback address, with identical public ports. */
export const EDGE_A = '127.0.1.1';
export const EDGE_B = '127.0.1.2';

export interface PairedInstance extends ServerProcess {
  agentPort: number;
  /** Its TLS_DIR's CA (PEM), which agents and clients trust. */
  ca: Buffer;
}

export interface InstancePair {
  a: PairedInstance;
  b: PairedInstance;
  /** `link` is both instances' CLUSTER_ADDR port. */
  ports: { http: number; tls: number; link: number; tcp: { first: number; last: number } };
}

/**
 * Two real instances on one database (CLUSTER.md §2) without a balancer: one CLUSTER_SECRET, each
 * its CLUSTER_ADDR, the public ports shared. A is started first (it bootstraps the API key).
 */
export async function startInstancePair(databaseUrl: string, env: Record<string, string> = {}): Promise<InstancePair> {
  const [http, tls, link, agentA, agentB] = (await freePorts(5)) as [number, number, number, number, number];
  const ports = { http, tls, link, tcp: await freePortRange(4) };
  const secret = randomBytes(32).toString('hex');
  const key = generateApiKey();
  const start = async (edgeHost: string, agentPort: number): Promise<PairedInstance> => {
    const tlsDir = makeTempDir('burrow-pair-');
    const server = await startServer({
      databaseUrl,
      bootstrapApiKey: key,
      env: {
        AGENT_PORT: String(agentPort),
        EDGE_HOST: edgeHost,
        EDGE_HTTP_PORT: String(http),
        EDGE_TLS_PORT: String(tls),
        EDGE_TCP_PORTS: `${ports.tcp.first}-${ports.tcp.last}`,
        EDGE_DOMAIN: 'burrow.localhost',
        TLS_DIR: tlsDir,
        CLUSTER_SECRET: secret,
        CLUSTER_ADDR: `${edgeHost}:${link}`,
        LOG_LEVEL: 'info',
        ...env,
      },
    });
    return Object.assign(server, { agentPort, ca: readFileSync(join(tlsDir, 'ca.pem')) });
  };
  const a = await start(EDGE_A, agentA);
  const b = await start(EDGE_B, agentB);
  return { a, b, ports };
}
