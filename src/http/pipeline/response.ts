import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requestLineWriter } from '../../observability/logger.js';

/**
 * Headers every response carries (SPEC §1) and the one log line per request. The line names
 * the route template, never the query string or any header, so no secret can reach it.
 */
export function registerResponseHeadersAndLog(
  app: FastifyInstance,
  recordMetrics: (request: FastifyRequest, reply: FastifyReply) => void,
): void {
  // Callback-style hooks: they run on every request, and a promise per hook is measurable.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('Ngrok-Operation-Id', request.id);
    reply.header('Cache-Control', 'no-store');
    // SPEC §1 says exactly `application/json`; Fastify would append `; charset=utf-8`.
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    done(null, payload);
  });

  const writeLine = requestLineWriter(app.log);
  app.addHook('onResponse', (request, reply, done) => {
    recordMetrics(request, reply);
    writeLine({
      operationId: String(request.id),
      method: request.method,
      route: request.is404 ? undefined : request.routeOptions.url,
      status: reply.statusCode,
      errorCode: reply.errorCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      principalId: request.principal?.id,
    });
    done();
  });
}
