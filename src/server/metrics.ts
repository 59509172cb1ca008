import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from '../storage/db.js';

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
 * Prometheus metrics at /metrics. Labels are route templates, methods, statuses, error codes and
 * statement kinds: never an id, a key or a token.
 */
export function registerMetrics(app: FastifyInstance, store: Store): (request: FastifyRequest, reply: FastifyReply) => void {
  const registry = new Registry();
  const requests = new Counter({
    name: 'burrow_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'burrow_http_request_duration_seconds',
    help: 'Time from request to response, by route template and method.',
    labelNames: ['route', 'method'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'burrow_http_errors_total',
    help: 'Error answers by status and error_code ("none" where the answer has no code).',
    labelNames: ['status', 'error_code'] as const,
    registers: [registry],
  });
  const queries = new Histogram({
    name: 'burrow_db_query_duration_seconds',
    help: 'Database statement latency by dialect, statement kind and outcome.',
    labelNames: ['dialect', 'kind', 'outcome'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
    registers: [registry],
  });

  // prom-client hashes a label object on every call; the label sets here are few and fixed, so
  // each one's child metric is looked up once and kept.
  const queryChild = memo((key: string) => {
    const [kind, outcome] = key.split('|') as [string, string];
    return queries.labels({ dialect: store.dialect, kind, outcome });
  });
  store.observeQueries((kind, ms, failed) => queryChild(`${kind}|${failed ? 'error' : 'ok'}`).observe(ms / 1000));

  const requestChild = memo((key: string) => {
    const [route, method, status] = key.split('|') as [string, string, string];
    return { count: requests.labels({ route, method, status }), duration: duration.labels({ route, method }) };
  });
  const failureChild = memo((key: string) => {
    const [status, errorCode] = key.split('|') as [string, string];
    return failures.labels({ status, error_code: errorCode });
  });

  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    const text = (await processMetrics().metrics()) + (await registry.metrics());
    return reply.type(registry.contentType).send(text);
  });

  // Called from the one onResponse hook (observability.ts).
  return (request, reply) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    const child = requestChild(`${route}|${request.method}|${reply.statusCode}`);
    child.count.inc();
    child.duration.observe(reply.elapsedTime / 1000);
    if (reply.statusCode >= 400) failureChild(`${reply.statusCode}|${reply.errorCode ?? 'none'}`).inc();
  };
}

function memo<T>(make: (key: string) => T): (key: string) => T {
  const made = new Map<string, T>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) made.set(key, (value = make(key)));
    return value;
  };
}
