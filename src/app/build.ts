import type { Config } from '../config.js';
import { ownerDirectory } from '../domain/accounts/owners.js';
import { ApiKeyService } from '../domain/api-keys/service.js';
import { Authenticator } from '../domain/auth.js';
import { ConsoleSessions } from '../domain/console/sessions.js';
import { errors } from '../domain/errors.js';
import { InspectionService } from '../domain/inspection/service.js';
import type { ReplaySender } from '../domain/inspection/replay.js';
import { CredentialService } from '../domain/credentials/service.js';
import { TunnelGroupBackendService } from '../domain/tunnel-group-backends/service.js';
import { TlsEdgeService } from '../domain/edges/service.js';
import type { RateLimiter } from '../domain/rate-limit.js';
import { buildHttpApp, type HttpApp } from '../http/app.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { Metrics } from '../observability/metrics.js';
import type { Store } from '../storage/db.js';
import { isUnavailableError } from '../storage/errors.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';
import { SqlApiKeyLookup } from '../storage/repositories/api-key-lookup.js';
import { SqlApiKeyRepository } from '../storage/repositories/api-keys.js';
import { SqlConsoleSessionRepository } from '../storage/repositories/console-sessions.js';
import { SqlInspectionRepository } from '../storage/repositories/inspection.js';
import { SqlCredentialRepository } from '../storage/repositories/credentials.js';
import { SqlTlsEdgeRepository } from '../storage/repositories/tls-edges.js';
import { SqlTunnelGroupBackendRepository } from '../storage/repositories/tunnel-group-backends.js';
import { createRateLimiter } from './rate-limit.js';
import { LiveObjectService } from '../domain/live-objects/service.js';
import type { SessionControl } from '../domain/live-objects/types.js';
import { SqlLiveObjectReader } from '../storage/repositories/live-objects.js';
import { SqlTunnelRepository } from '../storage/repositories/tunnels.js';
import { ReservedDomainService } from '../domain/reservations/domains.js';
import { ReservedAddrService } from '../domain/reservations/addrs.js';
import { SqlReservedDomainRepository } from '../storage/repositories/reserved-domains.js';
import { SqlReservedAddrRepository } from '../storage/repositories/reserved-addrs.js';
import { SqlAcmeRepository } from '../storage/repositories/acme.js';
import { sqlReservationReader } from '../storage/repositories/reservations.js';
import { TrafficHistoryService } from '../domain/traffic-history/service.js';
import { SqlTrafficMinutes } from '../storage/repositories/traffic-minutes.js';

export interface AppDeps {
  config: Config;
  store: Store;
  logger?: Logger;
  rateLimiter?: RateLimiter;
  /** How session commands reach agents; without a data plane here, they are queued for others. */
  sessionControl?: SessionControl;
  /** Shared with the data plane when start.ts runs one; else the API's own. */
  metrics?: Metrics;
  /** How captured requests are replayed (through this instance's public listener); none without a data plane here. */
  replay?: ReplaySender;
  /** With ACME in this instance's data plane: a reservation or edge changed, order its names now. */
  certificateNamesChanged?: () => void;
}

/**
 * The composition root of the API: repositories over the store, the domain services over
 * them, the metrics, then the HTTP application that serves them. Never listens (start.ts does).
 */
export async function buildApp(deps: AppDeps): Promise<HttpApp> {
  const { config, store } = deps;
  const logger = deps.logger ?? createLogger(config.logLevel);

  const accounts = new SqlAccountRepository(store);
  const credentialRepository = new SqlCredentialRepository(store);
  const authenticator = new Authenticator(new SqlApiKeyLookup(store), credentialRepository);
  const owners = ownerDirectory(accounts);
  const credentials = new CredentialService(credentialRepository, owners);
  const apiKeys = new ApiKeyService(new SqlApiKeyRepository(store), owners);
  const rateLimiter = deps.rateLimiter ?? createRateLimiter(config, store, logger);
  // A sign-in counts against the account's rate limit like any request made with the key.
  const consoleSessions = new ConsoleSessions(
    new SqlConsoleSessionRepository(store),
    async (apiKey) => {
      const principal = await authenticator.authenticate(`Bearer ${apiKey}`);
      const wait = rateLimiter.consume(principal.accountId);
      if (wait > 0) throw errors.rateLimited(wait);
      return principal;
    },
    config.console.idleTimeoutMs,
  );
  const groupRepository = new SqlTunnelGroupBackendRepository(store);
  const groups = new TunnelGroupBackendService(groupRepository);
  const edges = new TlsEdgeService(new SqlTlsEdgeRepository(store), config.maxPolicyRules, groups, sqlReservationReader(store), deps.certificateNamesChanged);
  const live = new LiveObjectService(new SqlLiveObjectReader(store), deps.sessionControl ?? queuedControl(new SqlTunnelRepository(store)), groupRepository);

  const inspection = new InspectionService(
    new SqlInspectionRepository(store),
    (caller, id) =>
      live.getEndpoint(caller, id).then(
        () => true,
        () => false,
      ),
    {
      endpointUrl: (caller, id) =>
        live.getEndpoint(caller, id).then(
          (endpoint) => endpoint.url,
          () => undefined,
        ),
      send: deps.replay,
    },
  );

  const tunnels = config.tunnels;
  const reservationSettings = { region: tunnels.region, edgeDomain: tunnels.edgeDomain, publicHost: tunnels.edgePublicHost, tcpPorts: tunnels.edgeTcpPorts, acmeConfigured: tunnels.acme !== undefined, acmeDnsHook: tunnels.acme?.dnsHook !== undefined };
  const reservedDomains = new ReservedDomainService(new SqlReservedDomainRepository(store), reservationSettings, tunnels.acme ? new SqlAcmeRepository(store) : undefined, deps.certificateNamesChanged);
  const reservedAddrs = new ReservedAddrService(new SqlReservedAddrRepository(store), reservationSettings);

  const metrics = deps.metrics ?? new Metrics();
  store.observeQueries((kind, ms, failed) => metrics.observeQuery(store.dialect, kind, ms, failed));

  return buildHttpApp({
    config,
    logger,
    authenticator,
    credentials,
    apiKeys,
    consoleSessions,
    inspection,
    trafficHistory: new TrafficHistoryService(new SqlTrafficMinutes(store)),
    edges,
    live,
    groups,
    reservedDomains,
    reservedAddrs,
    rateLimiter,
    metrics,
    ping: () => store.ping(),
    isUnavailable: isUnavailableError,
  });
}

/** Without a data plane here, a command waits in the queue of the instance holding the session. */
function queuedControl(repository: SqlTunnelRepository): SessionControl {
  return { send: (session, command) => repository.enqueueCommand(session.instanceId, session.id, command, Date.now()) };
}
