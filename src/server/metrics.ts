import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { Counter, Histogram } from './prometheus.js';
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
  const requests = new Counter('burrow_http_requests_total', 'HTTP requests answered, by route template, method and status.');
  const duration = new Histogram(
    'burrow_http_request_duration_seconds',
    'Time from request to response, by route template and method.',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  );
  const failures = new Counter('burrow_http_errors_total', 'Error answers by status and error_code ("none" where the answer has no code).');
  const queries = new Histogram(
    'burrow_db_query_duration_seconds',
    'Database statement latency by dialect, statement kind and outcome (on SQLite: a read\'s execution; a write\'s time from queued to durable).',
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
  );
  const families = [requests, duration, failures, queries];

  store.observeQueries((kind, ms, failed) => {
    const outcome = failed ? 'error' : 'ok';
    queries.get(`${kind}|${outcome}`, () => ({ dialect: store.dialect, kind, outcome })).observe(ms / 1000);
  });

  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    const text = (await processMetrics().metrics()) + families.map((family) => family.render()).join('');
    return reply.type(processMetrics().contentType).send(text);
  });

  // Called from the one onResponse hook (observability.ts).
  return (request, reply) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    const method = request.method;
    const status = reply.statusCode;
    requests.get(`${route}|${method}|${status}`, () => ({ route, method, status: String(status) })).inc();
    duration.get(`${route}|${method}`, () => ({ route, method })).observe(reply.elapsedTime / 1000);
    if (status >= 400) {
      const errorCode = reply.errorCode ?? 'none';
      failures.get(`${status}|${errorCode}`, () => ({ status: String(status), error_code: errorCode })).inc();
    }
  };
}
