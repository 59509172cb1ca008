import type { FastifyInstance } from 'fastify';
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
export function registerMetrics(app: FastifyInstance, store: Store): void {
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

  store.observeQueries((kind, ms, failed) => queries.observe({ dialect: store.dialect, kind, outcome: failed ? 'error' : 'ok' }, ms / 1000));

  app.addHook('onResponse', async (request, reply) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    const status = String(reply.statusCode);
    requests.inc({ route, method: request.method, status });
    duration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
    if (reply.statusCode >= 400) failures.inc({ status, error_code: reply.errorCode ?? 'none' });
  });

  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    const text = (await processMetrics().metrics()) + (await registry.metrics());
    return reply.type(registry.contentType).send(text);
  });
}
