// TUNNELS.md §5: the IP restriction, then the traffic policy, on every public connection before
// anything reaches the agent. A closed connection never gets a proxy stream.
import type { PolicyConnection, PolicyEndpoint, TerminateTlsOutcome } from '../../domain/policy/index.js';
import { evaluateConnection, type ConnectionPolicy } from '../../domain/tunnels/connection-policy.js';
import type { PublicConnection } from './connections.js';
import type { TlsTermination } from '../registry.js';

export interface PolicyMetrics {
  observePolicy(seconds: number, deniedBy: string | undefined): void;
  observePolicyAction(type: string, phase: string): void;
}

export class PolicyGate {
  constructor(
    private readonly region: string,
    private readonly metrics: PolicyMetrics | undefined,
  ) {}

  /** Evaluates the connection, records what happened on it, and says whether it may go on. */
  admit(conn: PublicConnection, policy: ConnectionPolicy, endpoint: PolicyEndpoint): boolean {
    if (policy.ipRestriction === undefined && policy.policy === undefined) return true;
    const started = process.hrtime.bigint();
    const verdict = evaluateConnection(policy, policyConnection(conn, this.region, endpoint, Date.now()));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    for (const outcome of verdict.verdicts) {
      for (const rule of outcome.rules) {
        for (const action of rule.actions) {
          if (action.type === 'log') conn.policyLogs.push(action.metadata);
          else if (action.type === 'terminate-tls') conn.termination = terminationOf(action.config);
          // TUNNELS.md §5: with enforce false a deny decision is only recorded: here, in the log line
          else if (action.type === 'restrict-ips' && action.action === 'deny' && !action.enforced) {
            conn.policyDryRuns.push({ rule: rule.rule, name: rule.name, action: 'restrict-ips', decision: 'deny', matched_cidr: action.matched_cidr });
          }
        }
      }
      for (const error of outcome.errors) conn.policyErrors.push(`rule ${error.rule} ${error.at}: ${error.message}`);
    }
    if (verdict.allowed) {
      this.metrics?.observePolicy(seconds, undefined);
      return true;
    }
    const closing = verdict.verdicts.at(-1)?.closedBy;
    const action = verdict.closedBy === 'ip_restriction' ? 'ip-restriction' : (closing?.type ?? 'deny');
    conn.verdict = 'denied';
    conn.deniedBy = { by: verdict.closedBy ?? 'traffic_policy', action, rule: closing?.rule ?? 0, name: closing?.name ?? null };
    this.metrics?.observePolicy(seconds, action);
    return false;
  }
}

/** The terminate-tls action's settings as the TLS port applies them. */
function terminationOf(config: TerminateTlsOutcome['config']): TlsTermination {
  const cas = config.mutual_tls_certificate_authorities;
  return {
    minVersion: config.min_version,
    maxVersion: config.max_version,
    ...(cas.length > 0 ? { mutualTls: { cas, strategy: config.mutual_tls_verification_strategy } } : {}),
  };
}

/** What the policy's conn.*, endpoint.* and time.* read for a public connection. */
export function policyConnection(conn: PublicConnection, region: string, endpoint: PolicyEndpoint, now: number): PolicyConnection {
  const socket = conn.socket;
  const server = conn.serverEnd();
  return {
    clientIp: socket.remoteAddress ?? '',
    clientPort: socket.remotePort ?? 0,
    serverIp: server.ip,
    serverPort: server.port,
    region,
    startedAt: conn.startedAt,
    endpoint,
    now,
    tls: conn.tls,
  };
}

const endpoints = new WeakMap<object, PolicyEndpoint>();

/** The `endpoint.*` variables of a pool's URL (computed once per pool). */
export function endpointOfPool(pool: { url: string; endpointId: string }): PolicyEndpoint {
  let endpoint = endpoints.get(pool);
  if (!endpoint) {
    const url = new URL(pool.url);
    const protocol = url.protocol.slice(0, -1);
    const port = url.port !== '' ? Number(url.port) : protocol === 'http' ? 80 : 443;
    endpoint = { url: pool.url, addr: `${url.hostname}:${port}`, host: url.hostname, id: pool.endpointId, protocol, port };
    endpoints.set(pool, endpoint);
  }
  return endpoint;
}
