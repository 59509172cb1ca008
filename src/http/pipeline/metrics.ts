import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from '../../observability/metrics.js';
import type { ExpositionFormat } from '../../observability/prometheus.js';

/**
 * Prometheus metrics at /metrics (the instruments live in observability/metrics.ts). Returns
 * the per-request recorder, called from the one onResponse hook (response.ts).
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics): (request: FastifyRequest, reply: FastifyReply) => void {
  const { httpRequests: requests, httpDuration: duration, httpErrors: failures } = metrics;

  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const format = negotiate(request.headers.accept);
    const text = await metrics.render(format);
    return reply.type(metrics.contentType(format)).send(text);
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

/**
 * OpenMetrics when the client prefers it (a Prometheus server says so with q values), else the
 * Prometheus text format, which is also the answer to anything else: scrapers accept it.
 */
export function negotiate(accept: string | undefined): ExpositionFormat {
  if (accept === undefined) return 'prometheus';
  let openMetrics = 0;
  let text = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2)) || 0;
    if (type === 'application/openmetrics-text') openMetrics = Math.max(openMetrics, weight);
    else if (type === 'text/plain' || type === 'text/*' || type === '*/*') text = Math.max(text, weight);
  }
  return openMetrics > 0 && openMetrics >= text ? 'openmetrics' : 'prometheus';
}
