import { Registry, collectDefaultMetrics } from 'prom-client';
import { CONTENT_TYPES, CallbackGauge, Counter, Histogram, renderFamilies, type ExpositionFormat, type FamilySnapshot } from './prometheus.js';

let processRegistry: Registry | undefined;

/** Process metrics are per process, not per app: collected once however many apps a process builds. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The instruments of one application: the HTTP layer records requests into them
 * (http/pipeline/metrics.ts), app/ feeds them the store's query timings. Labels are route
 * templates, methods, statuses, error codes and statement kinds: never an id, a key or a token.
 */
export class Metrics {
  readonly httpRequests = new Counter('burrow_http_requests_total', 'HTTP requests answered, by route template, method and status.');
  readonly httpDuration = new Histogram(
    'burrow_http_request_duration_seconds',
    'Time from request to response, by route template and method.',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  );
  readonly httpErrors = new Counter('burrow_http_errors_total', 'Error answers by status and error_code ("none" where the answer has no code).');
  readonly dbQueries = new Histogram(
    'burrow_db_query_duration_seconds',
    'Database statement latency by dialect, statement kind and outcome (on SQLite: a read\'s execution; a write\'s time from queued to durable).',
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
  );
  readonly publicConnections = new Counter(
    'burrow_public_connections_total',
    'Public connections to endpoints and edges, by proto (tcp, tls, http, https) and verdict (allowed, denied, unrouted).',
  );
  readonly publicBytes = new Counter(
    'burrow_public_bytes_total',
    'Bytes of public connections, by proto and direction (in: from the public client, out: to it).',
  );
  readonly publicRequests = new Counter('burrow_public_http_requests_total', 'HTTP requests through endpoints and edges, by proto (http, https).');
  readonly binds = new Counter('burrow_binds_total', 'Agent binds and labeled tunnels, by result (ok, or the ERR_NGROK code that refused them).');
  readonly agentAuths = new Counter(
    'burrow_agent_auths_total',
    'Agent Auths by result: ok, or the ERR_NGROK code that refused them (ERR_NGROK_717: refused unread, its address failed too often).',
  );
  readonly policyDuration = new Histogram(
    'burrow_policy_evaluation_seconds',
    'Time to evaluate the IP restriction and traffic policy of one public connection.',
    [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005, 0.025],
  );
  readonly deniedConnections = new Counter(
    'burrow_public_connections_denied_total',
    'Public connections closed by a policy, by the action that closed them (deny, restrict-ips, ip-restriction).',
  );
  readonly acmeOrders = new Counter('burrow_acme_orders_total', 'ACME certificate orders and renewals, by result (issued, failed).');
  readonly agentTlsFailures = new Counter(
    'burrow_agent_tls_failures_total',
    'Failed TLS handshakes on the agent port, by reason (the TLS alert or error, e.g. tlsv1_alert_unknown_ca: an agent that does not trust the CA).',
  );
  readonly policyActions = new Counter(
    'burrow_policy_actions_total',
    'Traffic policy actions taken on HTTP requests and answers, by action type and phase.',
  );
  private dataPlaneGauges: CallbackGauge[] = [];
  private certificateGauges: CallbackGauge[] = [];
  private readonly families: { snapshot(): FamilySnapshot }[] = [
    this.httpRequests,
    this.httpDuration,
    this.httpErrors,
    this.dbQueries,
    this.publicConnections,
    this.publicBytes,
    this.publicRequests,
    this.binds,
    this.agentAuths,
    this.policyDuration,
    this.deniedConnections,
    this.acmeOrders,
    this.agentTlsFailures,
    this.policyActions,
  ];

  /** One bind (or labeled tunnel) and its result: `ok` or the refusal's error code. */
  observeBind(result: string): void {
    this.binds.get(result, () => ({ result })).inc();
  }

  /** One ACME order (or renewal) and its result. */
  observeAcmeOrder(result: string): void {
    this.acmeOrders.get(result, () => ({ result })).inc();
  }

  /** One agent Auth and its result: `ok` or the refusal's error code. */
  observeAuth(result: string): void {
    this.agentAuths.get(result, () => ({ result })).inc();
  }

  /** One policy evaluation; `deniedBy` names the action when it closed the connection. */
  observePolicy(seconds: number, deniedBy: string | undefined): void {
    this.policyDuration.get('', () => ({})).observe(seconds);
    if (deniedBy !== undefined) this.deniedConnections.get(deniedBy, () => ({ action: deniedBy })).inc();
  }

  /** One failed TLS handshake on the agent port and its reason. */
  observeAgentTlsFailure(reason: string): void {
    this.agentTlsFailures.get(reason, () => ({ reason })).inc();
  }

  /** One traffic policy action taken in an HTTP phase. */
  observePolicyAction(type: string, phase: string): void {
    this.policyActions.get(`${type}|${phase}`, () => ({ type, phase })).inc();
  }

  /** One public connection when it ends: its proto, verdict and bytes each way. */
  observeConnection(proto: string, verdict: string, bytesIn: number, bytesOut: number): void {
    this.publicConnections.get(`${proto}|${verdict}`, () => ({ proto, verdict })).inc();
    this.publicBytes.get(`${proto}|in`, () => ({ proto, direction: 'in' })).inc(bytesIn);
    this.publicBytes.get(`${proto}|out`, () => ({ proto, direction: 'out' })).inc(bytesOut);
  }

  /** One HTTP request through an endpoint or edge (its answer sent or not). */
  observeHttpRequest(proto: string): void {
    this.publicRequests.get(proto, () => ({ proto })).inc();
  }

  /**
   * The counters the console's charts of the last hour roll up (domain/traffic-history/): public
   * connections, HTTP requests, bytes each way, and denials by action: connections closed by a
   * policy, and HTTP requests answered by a `deny` action.
   */
  trafficTotals(): { connections: number; requests: number; bytesIn: number; bytesOut: number; denials: Map<string, number> } {
    const sum = (family: Counter, keep: (labels: Readonly<Record<string, string>>) => boolean = () => true) =>
      family.snapshot().samples.reduce((total, sample) => (keep(sample.labels) ? total + sample.value : total), 0);
    const denials = new Map<string, number>();
    for (const sample of this.deniedConnections.snapshot().samples) denials.set(sample.labels.action ?? 'deny', sample.value);
    const httpDenials = sum(this.policyActions, (labels) => labels.type === 'deny');
    if (httpDenials > 0) denials.set('deny', (denials.get('deny') ?? 0) + httpDenials);
    return {
      connections: sum(this.publicConnections),
      requests: sum(this.publicRequests),
      bytesIn: sum(this.publicBytes, (labels) => labels.direction === 'in'),
      bytesOut: sum(this.publicBytes, (labels) => labels.direction === 'out'),
      denials,
    };
  }

  /** The data plane's live counts, read at render time (set once by the data plane). */
  gaugeDataPlane(read: { sessions(): number; tunnelsByProto(): Iterable<readonly [string, number]> }): void {
    this.dataPlaneGauges = [
      new CallbackGauge('burrow_agent_sessions', 'Agent sessions held by this instance.', () => [[{}, read.sessions()]]),
      new CallbackGauge('burrow_tunnels', 'Tunnels held by this instance, by proto (labeled for labeled tunnels).', () =>
        [...read.tunnelsByProto()].map(([proto, count]) => [{ proto }, count] as const),
      ),
    ];
  }

  /** The certificates served, read at render time: each one's notAfter, by id (never its names). */
  gaugeCertificates(read: () => Iterable<{ readonly id: string; readonly notAfter: Date }>): void {
    this.certificateGauges = [
      new CallbackGauge('burrow_certificate_expiry_seconds', 'When each certificate served expires (notAfter, seconds since the Unix epoch), by certificate_id.', () =>
        [...read()].map(({ id, notAfter }) => [{ certificate_id: id }, Math.floor(notAfter.getTime() / 1000)] as const),
      ),
    ];
  }

  /** One database statement: its dialect, kind (select, insert, …), duration and outcome. */
  observeQuery(dialect: string, kind: string, ms: number, failed: boolean): void {
    const outcome = failed ? 'error' : 'ok';
    this.dbQueries.get(`${kind}|${outcome}`, () => ({ dialect, kind, outcome })).observe(ms / 1000);
  }

  /** The Content-Type of `render(format)`'s text. */
  contentType(format: ExpositionFormat): string {
    return CONTENT_TYPES[format];
  }

  /** Process metrics, then this application's, in the format asked for. */
  async render(format: ExpositionFormat = 'prometheus'): Promise<string> {
    const process = (await processMetrics().getMetricsAsJSON()).map(
      (metric): FamilySnapshot => ({
        name: metric.name,
        help: metric.help,
        type: String(metric.type),
        samples: metric.values.map((value) => ({
          name: (value as { metricName?: string }).metricName ?? metric.name,
          labels: Object.fromEntries(Object.entries(value.labels).map(([label, given]) => [label, String(given)])),
          value: value.value,
        })),
      }),
    );
    return renderFamilies([...process, ...[...this.families, ...this.dataPlaneGauges, ...this.certificateGauges].map((family) => family.snapshot())], format);
  }
}
