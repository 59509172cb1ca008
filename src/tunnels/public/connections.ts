import type { TlsTermination } from '../registry.js';
import type { TlsVariables } from '../../domain/policy/tls-variables.js';
// One record per public connection: its id, where it went, and the log line and metrics at its end.
import type { Server, Socket } from 'node:net';
import { newBareId } from '../../domain/ids.js';
import type { Logger } from '../../observability/logger.js';
import { serverEndOf } from './local-end.js';
import { formatAddress, type Address } from './proxy-proto.js';

/** The most entries each policy list of a connection keeps for its log line. */
const MAX_POLICY_ENTRIES = 64;

export type PublicProto = 'tcp' | 'tls' | 'http' | 'https';
/** allowed: carried to an agent; denied: closed by a policy; unrouted: no endpoint, edge or live tunnel took it. */
export type Verdict = 'allowed' | 'denied' | 'unrouted';

/** Where the counts of the data plane go (the Metrics class, or nothing in unit tests). */
export interface ConnectionMetrics {
  observeConnection(proto: string, verdict: string, bytesIn: number, bytesOut: number): void;
  observeHttpRequest?(proto: string): void;
}

export class PublicConnection {
  readonly id = newBareId('conn');
  readonly startedAt = Date.now();
  readonly clientAddr: string;
  endpointId: string | undefined;
  edgeId: string | undefined;
  tunnelId: string | undefined;
  verdict: Verdict = 'unrouted';
  /** Why it ended without being carried, or the error that ended it. */
  outcome: string | undefined;
  /** HTTP requests served on it. */
  requests = 0;
  /** What closed it when a policy did: the IP restriction or the traffic policy, its rule and action. */
  deniedBy: { by: string; action: string; rule: number; name: string | null } | undefined;
  /** The metadata of the policy's `log` actions, interpolated. */
  readonly policyLogs: unknown[] = [];
  /** Decisions of `restrict-ips` actions with `enforce: false` that would have closed it. */
  readonly policyDryRuns: { rule: number; name: string | null; action: string; decision: string; matched_cidr: string }[] = [];
  /** Run-time errors of the policy's expressions (each counted as false). */
  readonly policyErrors: string[] = [];
  /** The HTTP phases' actions taken on its requests, in order (`on_http_request:add-headers`). */
  readonly policyActions: string[] = [];
  /** Entries the lists above did not take: a long keep-alive connection through HTTP phases adds some per request. */
  policyEntriesDropped = 0;
  /** Set by a `terminate-tls` action of the policy: burrow terminates TLS with these settings. */
  termination: TlsTermination | undefined;
  /** conn.tls.*: read when a policy first asks (the handshake's certificates are parsed then, once). */
  private tlsReader: (() => TlsVariables) | undefined;
  private tlsRead: TlsVariables | undefined;
  private ended = false;

  /**
   * Adds to one of the connection's policy lists, which its one log line carries: HTTP phases add
   * entries per request, so each list keeps the first MAX_POLICY_ENTRIES (every request's own line
   * has its actions) and the rest are only counted.
   */
  listPolicy<T>(list: T[], entry: T): void {
    if (list.length < MAX_POLICY_ENTRIES) list.push(entry);
    else this.policyEntriesDropped++;
  }

  constructor(
    /** tls until the TLS port terminates it as https. */
    public proto: PublicProto,
    /** The raw TCP connection: its byte counts are the connection's. */
    readonly socket: Socket,
    private readonly sink: ConnectionSink,
    /** The listener that accepted it. */
    private readonly server?: Server,
  ) {
    this.clientAddr = formatAddress({ ip: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 });
    socket.once('close', () => this.end());
  }

  /** What `conn.tls.*` reads from now on (the ClientHello's name, then the handshake). */
  useTls(reader: () => TlsVariables): void {
    this.tlsReader = reader;
    this.tlsRead = undefined;
  }

  get tls(): TlsVariables | undefined {
    return (this.tlsRead ??= this.tlsReader?.());
  }

  /** The address and port the client connected to. */
  serverEnd(): Address {
    return serverEndOf(this.socket, this.server);
  }

  /** Logs and counts the connection; runs once, on the socket's close. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.sink.ended(this);
  }
}

/** Creates the records and writes their line and metrics when they end. */
export class ConnectionSink {
  constructor(
    private readonly logger: Logger,
    private readonly metrics: ConnectionMetrics | undefined,
  ) {}

  open(proto: PublicProto, socket: Socket, server?: Server): PublicConnection {
    return new PublicConnection(proto, socket, this, server);
  }

  /**
   * One line per HTTP request through an endpoint: its status (null when no answer was sent, or it
   * was relayed as bytes: `relayed`), duration and the policy actions taken on it. The path is logged without its query,
   * which may carry tokens.
   */
  request(conn: PublicConnection, request: { method: string; path: string; status: number | null; relayed: boolean; startedAt: number; actions: readonly string[] }): void {
    this.metrics?.observeHttpRequest?.(conn.proto);
    this.logger.info(
      {
        event: 'http_request',
        conn_id: conn.id,
        endpoint_id: conn.endpointId ?? null,
        method: request.method,
        path: request.path,
        status: request.status,
        ...(request.relayed ? { relayed: true } : {}),
        duration_ms: Date.now() - request.startedAt,
        ...(request.actions.length > 0 ? { policy_actions: request.actions } : {}),
      },
      'http request',
    );
  }

  ended(conn: PublicConnection): void {
    const bytesIn = conn.socket.bytesRead;
    const bytesOut = conn.socket.bytesWritten;
    this.metrics?.observeConnection(conn.proto, conn.verdict, bytesIn, bytesOut);
    this.logger.info(
      {
        event: 'public_connection',
        conn_id: conn.id,
        proto: conn.proto,
        ...(conn.edgeId ? { edge_id: conn.edgeId } : { endpoint_id: conn.endpointId ?? null }),
        tunnel_id: conn.tunnelId ?? null,
        client_addr: conn.clientAddr,
        verdict: conn.verdict,
        ...(conn.deniedBy ? { denied_by: conn.deniedBy } : {}),
        ...(conn.policyLogs.length > 0 ? { policy_log: conn.policyLogs } : {}),
        ...(conn.policyDryRuns.length > 0 ? { policy_not_enforced: conn.policyDryRuns } : {}),
        ...(conn.policyErrors.length > 0 ? { policy_errors: conn.policyErrors } : {}),
        ...(conn.policyActions.length > 0 ? { policy_actions: conn.policyActions } : {}),
        ...(conn.policyEntriesDropped > 0 ? { policy_entries_dropped: conn.policyEntriesDropped } : {}),
        ...(conn.outcome ? { outcome: conn.outcome } : {}),
        ...(conn.proto === 'http' || conn.proto === 'https' ? { requests: conn.requests } : {}),
        bytes_in: bytesIn,
        bytes_out: bytesOut,
        duration_ms: Date.now() - conn.startedAt,
      },
      'public connection ended',
    );
  }
}
