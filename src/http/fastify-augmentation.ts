import type { Principal } from '../domain/accounts/types.js';

/**
 * Every augmentation of Fastify's types, in one place: what the HTTP layer decorates the
 * instance, requests and replies with, and the route config it reads. Add new ones here.
 */
declare module 'fastify' {
  interface FastifyInstance {
    /** Marks the start of shutdown: /readyz fails and connections are closed after each answer. */
    beginShutdown(): void;
  }
  interface FastifyRequest {
    /** Who is calling, set by the request gate (pipeline/hooks.ts) on every non-public route. */
    principal: Principal;
  }
  interface FastifyReply {
    /** The error_code of the answer, when it is an error with one: logged and counted. */
    errorCode?: string | undefined;
  }
  interface FastifyContextConfig {
    /** Operational endpoints: no API key, no version header (SPEC §2). */
    public?: boolean;
  }
}

export {};
