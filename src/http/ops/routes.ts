import type { FastifyInstance } from 'fastify';
import Type from 'typebox';

export interface OpsRouteDeps {
  /** Throws when the database cannot answer. */
  ping(): Promise<void>;
  isClosing(): boolean;
}

const Status = Type.Object({ status: Type.String() });
/** A load balancer's probe must get an answer even when the database hangs instead of failing. */
const READY_TIMEOUT_MS = 2000;
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
        await withTimeout(deps.ping(), READY_TIMEOUT_MS);
        return { status: 'ready' };
      } catch (error) {
        reply.log.warn({ err: error }, 'readiness check failed');
        return reply.code(503).send({ status: 'database unavailable' });
      }
    },
  );

  app.get('/openapi.json', { config, schema: { hide: true } }, async () => app.swagger());
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
