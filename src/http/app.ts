import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import type { Config } from '../config.js';
import type { ApiKeyService } from '../domain/api-keys/service.js';
import type { Authenticator } from '../domain/auth.js';
import type { ConsoleSessions } from '../domain/console/sessions.js';
import type { InspectionService } from '../domain/inspection/service.js';
import type { CredentialService } from '../domain/credentials/service.js';
import type { TunnelGroupBackendService } from '../domain/tunnel-group-backends/service.js';
import type { TlsEdgeService } from '../domain/edges/service.js';
import { newBareId } from '../domain/ids.js';
import type { RateLimiter } from '../domain/rate-limit.js';
import type { LiveObjectService } from '../domain/live-objects/service.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { tunnelGroupBackendRoutes } from './tunnel-group-backends/routes.js';
import { TunnelGroupBackendResponse } from './tunnel-group-backends/schemas.js';
import { apiKeyRoutes } from './api-keys/routes.js';
import { ApiKeyResponse } from './api-keys/schemas.js';
import { ErrorBody } from './common/schemas.js';
import { consoleSessionAuth, consoleSessionRoutes } from './console/session-routes.js';
import { consoleStaticRoutes } from './console/static.js';
import { credentialRoutes } from './credentials/routes.js';
import { reservedAddrRoutes } from './reserved-addrs/routes.js';
import { reservedDomainRoutes } from './reserved-domains/routes.js';
import { ReservedAddrResponse } from './reserved-addrs/schemas.js';
import { ReservedDomainResponse } from './reserved-domains/schemas.js';
import type { ReservedAddrService } from '../domain/reservations/addrs.js';
import type { ReservedDomainService } from '../domain/reservations/domains.js';
import { inspectionRoutes } from './inspection/routes.js';
import { InspectedRequestResponse } from './inspection/schemas.js';
import { CredentialResponse } from './credentials/schemas.js';
import { tlsEdgeRoutes } from './edges/routes.js';
import { backendModuleRoutes } from './edges/backend-routes.js';
import { BackendModuleResponse, TlsEdgeResponse, TlsTerminationModuleResponse, TrafficPolicyModuleResponse } from './edges/schemas.js';
import { trafficPolicyRoutes } from './edges/traffic-policy-routes.js';
import { policyTestRoutes } from './traffic-policy/routes.js';
import { trafficHistoryRoutes } from './traffic-history/routes.js';
import type { TrafficHistoryService } from '../domain/traffic-history/service.js';
import { tlsTerminationRoutes } from './edges/tls-termination-routes.js';
import { endpointRoutes } from './endpoints/routes.js';
import { EndpointResponse } from './endpoints/schemas.js';
import { opsRoutes } from './ops/routes.js';
import { BODY_LIMIT_BYTES, registerJsonBodyParser } from './pipeline/body.js';
import { lazyChildLogger } from './pipeline/child-logger.js';
import { answerClientError, sendError, sendErrorBeforeRouting, toApiError } from './pipeline/errors.js';
import { registerRequestGate, registerValidationOnRoutes } from './pipeline/hooks.js';
import { registerMetrics } from './pipeline/metrics.js';
import { registerResponseHeadersAndLog } from './pipeline/response.js';
import { registerRouting } from './pipeline/routing.js';
import { orderPreservingSerializerFactory } from './pipeline/serializer.js';
import { parseQueryString } from './pipeline/validation.js';
import { tunnelSessionRoutes } from './tunnel-sessions/routes.js';
import { TunnelSessionResponse } from './tunnel-sessions/schemas.js';
import { tunnelRoutes } from './tunnels/routes.js';
import { TunnelResponse } from './tunnels/schemas.js';
import { registerShutdownClose } from './pipeline/shutdown.js';

export type HttpApp = FastifyInstance;

/** What the HTTP layer is given by the composition root (app/): services, never a database. */
export interface HttpDeps {
  config: Config;
  logger: Logger;
  authenticator: Authenticator;
  credentials: CredentialService;
  apiKeys: ApiKeyService;
  /** Console sign-in sessions; the console is served when config.console.enabled. */
  consoleSessions: ConsoleSessions;
  /** Traffic inspection settings and captured requests. */
  inspection: InspectionService;
  /** The last hour of traffic, for the console's charts. */
  trafficHistory: TrafficHistoryService;
  edges: TlsEdgeService;
  /** Agent sessions, tunnels and endpoints, and the session commands. */
  live: LiveObjectService;
  groups: TunnelGroupBackendService;
  reservedDomains: ReservedDomainService;
  reservedAddrs: ReservedAddrService;
  /** Closed with the app. */
  rateLimiter: RateLimiter;
  metrics: Metrics;
  /** Throws when the database cannot answer (GET /readyz). */
  ping: () => Promise<void>;
  /** Whether an error means the database is unavailable (answered 503). */
  isUnavailable: (error: unknown) => boolean;
}

/**
 * The Fastify instance with the whole request pipeline (pipeline/) and every route. Never
 * listens: app/start.ts does.
 */
export async function buildHttpApp(deps: HttpDeps): Promise<HttpApp> {
  const { config, authenticator, credentials, edges, groups, live, rateLimiter } = deps;
  const toAnswer = (error: unknown, request: FastifyRequest) => toApiError(error, request, deps.isUnavailable);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
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
      const answer = toAnswer(error, request);
      request.log.info({ method: request.method, status: answer.statusCode, framework_error: error.code }, 'request completed');
      sendErrorBeforeRouting(reply, answer);
    },
    schemaController: { compilersFactory: { buildSerializer: orderPreservingSerializerFactory() as never } },
  });
  // A client may half-close its side once the request is sent (as `nc -N` or a shell pipe
  // does); Node would then drop a request still being answered. Answer it, then close.
  (app.server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  // Requests are validated by our own compiler (pipeline/validation.ts) in preValidation hooks.
  app.setValidatorCompiler(() => () => true);

  let closing = false;
  app.decorate('beginShutdown', () => {
    closing = true;
  });

  app.setErrorHandler((error, request, reply) => sendError(reply, toAnswer(error, request)));
  registerJsonBodyParser(app);
  // The route table and request validation attach to routes as they are added: both first.
  const checkRoute = registerRouting(app);
  registerValidationOnRoutes(app);
  app.addHook('onClose', async () => rateLimiter.close?.());
  registerShutdownClose(app, () => closing);
  registerRequestGate(app, {
    authenticator,
    rateLimiter,
    checkRoute,
    hostMakesUris: config.publicUrl === undefined,
    sessionAuth: config.console.enabled ? consoleSessionAuth(deps.consoleSessions) : undefined,
  });
  registerResponseHeadersAndLog(app, registerMetrics(app, deps.metrics));

  app.addSchema(ErrorBody);
  app.addSchema(CredentialResponse);
  app.addSchema(TrafficPolicyModuleResponse);
  app.addSchema(BackendModuleResponse);
  app.addSchema(TlsTerminationModuleResponse);
  app.addSchema(TunnelGroupBackendResponse);
  app.addSchema(TlsEdgeResponse);
  app.addSchema(TunnelSessionResponse);
  app.addSchema(TunnelResponse);
  app.addSchema(EndpointResponse);
  app.addSchema(ReservedDomainResponse);
  app.addSchema(ReservedAddrResponse);
  app.addSchema(ApiKeyResponse);
  app.addSchema(InspectedRequestResponse);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'burrow',
        version: '2',
        description: 'Tunnel credentials, TLS edges with their traffic policy and backend modules, tunnel group backends, and the live agent sessions, tunnels and endpoints. Send `Service-Version: 2` (or `Ngrok-Version: 2`).',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  await app.register(opsRoutes, { ping: deps.ping, isClosing: () => closing });
  await app.register(credentialRoutes, { credentials, publicUrl: config.publicUrl });
  await app.register(tlsEdgeRoutes, { edges, publicUrl: config.publicUrl });
  await app.register(trafficPolicyRoutes, { edges });
  await app.register(policyTestRoutes, { maxPolicyRules: config.maxPolicyRules, region: config.tunnels.region });
  await app.register(tunnelSessionRoutes, { live, publicUrl: config.publicUrl });
  await app.register(tunnelRoutes, { live, publicUrl: config.publicUrl });
  await app.register(endpointRoutes, { live, publicUrl: config.publicUrl });
  await app.register(backendModuleRoutes, { edges, publicUrl: config.publicUrl });
  await app.register(tlsTerminationRoutes, { edges, publicUrl: config.publicUrl });
  await app.register(tunnelGroupBackendRoutes, { groups, publicUrl: config.publicUrl });
  await app.register(reservedDomainRoutes, { reservedDomains: deps.reservedDomains, publicUrl: config.publicUrl });
  await app.register(reservedAddrRoutes, { reservedAddrs: deps.reservedAddrs, publicUrl: config.publicUrl });
  await app.register(apiKeyRoutes, { apiKeys: deps.apiKeys, publicUrl: config.publicUrl });
  await app.register(inspectionRoutes, { inspection: deps.inspection, publicUrl: config.publicUrl });
  await app.register(trafficHistoryRoutes, { history: deps.trafficHistory });
  if (config.console.enabled) {
    await app.register(consoleSessionRoutes, { sessions: deps.consoleSessions, publicUrl: config.publicUrl, agentServer: agentServer(config) });
    await app.register(consoleStaticRoutes);
  }
  return app;
}

/** The agent address and CA the console's snippets name; null where there is none (no data plane, an operator's certificate). */
function agentServer(config: Config): { agent_addr: string | null; ca_file: string | null } {
  const { agentPort, agentHostname, agentTlsCert, tlsDir } = config.tunnels;
  if (agentPort === 0) return { agent_addr: null, ca_file: null };
  const host = agentHostname ?? 'localhost';
  return { agent_addr: `${host.includes(':') ? `[${host}]` : host}:${agentPort}`, ca_file: agentTlsCert === undefined ? `${tlsDir.replace(/\/+$/, '')}/ca.pem` : null };
}
