import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { Config } from '../config.js';
import { Authenticator } from '../domain/auth.js';
import { CredentialService } from '../domain/credentials/service.js';
import { newBareId } from '../domain/ids.js';
import { ErrorBody } from '../http/common/schemas.js';
import { credentialRoutes } from '../http/credentials/routes.js';
import { CredentialResponse } from '../http/credentials/schemas.js';
import { tlsEdgeRoutes } from '../http/edges/routes.js';
import { TlsEdgeResponse, TrafficPolicyModuleResponse } from '../http/edges/schemas.js';
import { trafficPolicyRoutes } from '../http/edges/traffic-policy-routes.js';
import { opsRoutes } from '../http/ops/routes.js';
import type { Store } from '../storage/db.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';
import { SqlApiKeyLookup } from '../storage/repositories/api-key-lookup.js';
import { SqlCredentialRepository } from '../storage/repositories/credentials.js';
import { SqlTlsEdgeRepository } from '../storage/repositories/tls-edges.js';
import { TlsEdgeService } from '../domain/edges/service.js';
import { BODY_LIMIT_BYTES, registerJsonBodyParser } from './body.js';
import { answerClientError, sendError, sendErrorBeforeRouting, toApiError } from './errors.js';
import { registerRequestGate, registerValidationOnRoutes, type RateLimiter } from './hooks.js';
import { createLogger, lazyChildLogger, type Logger } from './logger.js';
import { registerResponseHeadersAndLog } from './observability.js';
import { registerMetrics } from './metrics.js';
import { createRateLimiter } from './rate-limit.js';
import { registerRouting } from './routing.js';
import { orderPreservingSerializerFactory } from './serializer.js';
import { parseQueryString } from './validation.js';

export interface AppDeps {
  config: Config;
  store: Store;
  logger?: Logger;
  rateLimiter?: RateLimiter;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Marks the start of shutdown: /readyz fails and connections are closed after each answer. */
    beginShutdown(): void;
  }
}


/** Builds the whole HTTP application on an open, migrated store. Never listens. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, store } = deps;
  const app = Fastify({
    loggerInstance: (deps.logger ?? createLogger(config.logLevel)) as FastifyBaseLogger,
    // One line per request is written by our onResponse hook instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'operation_id' }),
    genReqId: () => newBareId('op'),
    childLoggerFactory: (logger, bindings) => lazyChildLogger(logger, bindings),
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    trustProxy: config.trustProxy,
    return503OnClosing: false,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      // Node enforces the two timeouts above only when it sweeps connections, every 30 s by
      // default; a slow client would then hold a socket far longer than configured.
      connectionsCheckingInterval: 500,
      // Node would answer a missing Host itself, with an empty body; checkHostHeader answers it.
      requireHostHeader: false,
    },
    routerOptions: {
      ignoreTrailingSlash: false,
      ignoreDuplicateSlashes: false,
      caseSensitive: true,
      maxParamLength: 500,
      querystringParser: parseQueryString,
    },
    clientErrorHandler: answerClientError,
    // Malformed percent-encoding and over-long path parameters are caught by the router before
    // any hook runs: answer them as unknown paths, with the headers and log line of any other.
    frameworkErrors: (error, request, reply) => {
      const answer = toApiError(error, request);
      request.log.info({ method: request.method, status: answer.statusCode, framework_error: error.code }, 'request completed');
      sendErrorBeforeRouting(reply, answer);
    },
    schemaController: { compilersFactory: { buildSerializer: orderPreservingSerializerFactory() as never } },
  });
  // A client may half-close its side once the request is sent (as `nc -N` or a shell pipe
  // does); Node would then drop a request still being answered. Answer it, then close.
  (app.server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  // Requests are validated by our own compiler (server/validation.ts) in preValidation hooks.
  app.setValidatorCompiler(() => () => true);

  let closing = false;
  app.decorate('beginShutdown', () => {
    closing = true;
  });

  const accounts = SqlAccountRepository.of(store);
  const credentialRepository = new SqlCredentialRepository(store);
  const authenticator = new Authenticator(new SqlApiKeyLookup(store), credentialRepository);
  const credentials = new CredentialService(credentialRepository, {
    isActiveMember: async (accountId, id) => {
      const principal = await accounts.getPrincipal(id);
      return principal !== undefined && principal.accountId === accountId && principal.revokedAt === null;
    },
  });

  const edges = new TlsEdgeService(new SqlTlsEdgeRepository(store), config.maxPolicyRules);

  app.setErrorHandler((error, request, reply) => sendError(reply, toApiError(error, request)));
  registerJsonBodyParser(app);
  // The route table and request validation attach to routes as they are added: both first.
  const checkRoute = registerRouting(app);
  registerValidationOnRoutes(app);
  const rateLimiter = deps.rateLimiter ?? createRateLimiter(config, store, app.log);
  app.addHook('onClose', async () => rateLimiter.close?.());
  registerRequestGate(app, {
    authenticator,
    rateLimiter,
    checkRoute,
    hostMakesUris: config.publicUrl === undefined,
    isClosing: () => closing,
  });
  registerResponseHeadersAndLog(app, registerMetrics(app, store));

  app.addSchema(ErrorBody);
  app.addSchema(CredentialResponse);
  app.addSchema(TrafficPolicyModuleResponse);
  app.addSchema(TlsEdgeResponse);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'burrow',
        version: '2',
        description: 'Tunnel credentials, TLS edges and their traffic policy. Send `Service-Version: 2` (or `Ngrok-Version: 2`).',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  await app.register(opsRoutes, { ping: () => store.ping(), isClosing: () => closing });
  await app.register(credentialRoutes, { credentials, publicUrl: config.publicUrl });
  await app.register(tlsEdgeRoutes, { edges, publicUrl: config.publicUrl });
  await app.register(trafficPolicyRoutes, { edges });
  return app;
}
