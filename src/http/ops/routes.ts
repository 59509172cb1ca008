import type { FastifyInstance } from 'fastify';
import Type from 'typebox';

export interface OpsRouteDeps {
  /** Throws when the database cannot answer. */
  ping(): Promise<void>;
  isClosing(): boolean;
}

const Status = Type.Object({ status: Type.String() });
const config = { public: true };

/** Operational endpoints: no API key and no version header (SPEC §2). */
export async function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): Promise<void> {
  app.get(
    '/healthz',
    { config, schema: { hide: true, response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );

  // Ready means "send me traffic": the database answers and the process is not shutting down.
  app.get(
    '/readyz',
    { config, schema: { hide: true, response: { 200: Status, 503: Status } } },
    async (_request, reply) => {
      if (deps.isClosing()) return reply.code(503).send({ status: 'shutting down' });
      try {
        await deps.ping();
        return { status: 'ready' };
      } catch (error) {
        reply.log.warn({ err: error }, 'readiness check failed');
        return reply.code(503).send({ status: 'database unavailable' });
      }
    },
  );

  app.get('/openapi.json', { config, schema: { hide: true } }, async () => app.swagger());
}
