import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from '../../observability/metrics.js';

/**
 * Prometheus metrics at /metrics (the instruments live in observability/metrics.ts). Returns
 * the per-request recorder, called from the one onResponse hook (response.ts).
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics): (request: FastifyRequest, reply: FastifyReply) => void {
  const { httpRequests: requests, httpDuration: duration, httpErrors: failures } = metrics;

  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    const text = await metrics.render();
    return reply.type(metrics.contentType).send(text);
  });

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
