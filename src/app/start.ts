import type { Config } from '../config.js';
import { useOAuthProviders } from '../domain/identity/oauth-providers.js';
import { AccountService } from '../domain/accounts/service.js';
import type { HttpApp } from '../http/app.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { Metrics } from '../observability/metrics.js';
import { TrafficRollup } from '../domain/traffic-history/rollup.js';
import { ReplayTokens } from '../domain/inspection/replay-tokens.js';
import { SqlTrafficMinutes } from '../storage/repositories/traffic-minutes.js';
import { openStore, type Store } from '../storage/db.js';
import { migrateToLatest } from '../storage/migrate.js';
import { SqlAccountRepository } from '../storage/repositories/accounts.js';
import { buildApp } from './build.js';
import { newId } from '../domain/ids.js';
import type { SessionControl } from '../domain/live-objects/types.js';
import { SqlTunnelRepository } from '../storage/repositories/tunnels.js';
import { SqlEdgeRouteReader } from '../storage/repositories/edge-routes.js';
import { sqlReservationReader } from '../storage/repositories/reservations.js';
import { SqlAcmeRepository } from '../storage/repositories/acme.js';
import { createDataPlane, type DataPlane } from '../tunnels/data-plane.js';
import { InstanceKeeper } from '../tunnels/instance-keeper.js';
import { claimInstanceIdentity, type InstanceIdentity } from '../tunnels/instance-identity.js';
import { httpListener, type Listener } from './listeners.js';
import { StartupError, reason } from './startup-error.js';
import { clusterCertificateAuthority } from './cluster.js';
import { InspectionRecorder } from '../domain/inspection/recorder.js';
import { SqlInspectionRepository } from '../storage/repositories/inspection.js';
import { replaySender } from './replay.js';
import { SqlRemoteRouteSource } from '../storage/repositories/remote-routes.js';
import type { ClusterSettings } from '../tunnels/cluster/setup.js';

export { StartupError };

/** The variable to blame when a listener cannot listen: the port when it is taken or privileged. */
function listenerVariable(listener: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const portProblem = code === 'EADDRINUSE' || code === 'EACCES';
  if (listener === 'http') return portProblem ? 'PORT' : 'HOST';
  if (listener === 'agents') return portProblem ? 'AGENT_PORT' : 'HOST';
  if (listener === 'cluster') return 'CLUSTER_ADDR';
  const port = EDGE_PORT_VARIABLES[listener];
  if (port === undefined) return `the ${listener} listener`;
  return portProblem ? port : 'EDGE_HOST';
}

const EDGE_PORT_VARIABLES: Record<string, string> = { 'edge-http': 'EDGE_HTTP_PORT', 'edge-tls': 'EDGE_TLS_PORT', 'edge-tcp': 'EDGE_TCP_PORTS' };

/** Where the listener tried to listen, for the message (the TCP ports open at bind, not here). */
function listenerAddress(listener: string, config: Config): string {
  if (listener === 'http') return ` on ${config.host}:${config.port}`;
  if (listener === 'agents') return ` on ${config.tunnels.agentHost}:${config.tunnels.agentPort}`;
  if (listener === 'edge-http') return ` on ${config.tunnels.edgeHost}:${config.tunnels.edgeHttpPort}`;
  if (listener === 'edge-tls') return ` on ${config.tunnels.edgeHost}:${config.tunnels.edgeTlsPort}`;
  if (listener === 'cluster') return ` on ${config.tunnels.cluster.addr}`;
  return '';
}

export interface RunningServer {
  app: HttpApp;
  store: Store;
  address: string;
  /** Stops accepting, lets in-flight requests finish, then closes the database. */
  stop(): Promise<void>;
  /** Reads the certificate files again (SIGHUP): a bad new pair keeps the old one, logged. */
  reloadCertificates(): Promise<void>;
}

/** Opens and migrates the store, bootstraps an empty database, and listens. */
export async function start(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  // the oauth action's providers, for the policies checked from now on (IDENTITY.md §2)
  useOAuthProviders(config.oauthProviders);
  let store: Store;
  try {
    store = openStore(config.databaseUrl, {
      poolSize: config.dbPoolSize,
      statementTimeoutMs: config.dbStatementTimeoutMs,
    });
  } catch (error) {
    throw new StartupError('DATABASE_URL', `cannot open the database: ${reason(error)}`);
  }
  try {
    const applied = await migrateToLatest(store);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    await bootstrap(store, config, logger);
  } catch (error) {
    await store.close().catch(() => {});
    throw new StartupError('DATABASE_URL', `cannot prepare the database: ${reason(error)}`);
  }

  let identity: InstanceIdentity;
  try {
    // A data plane keeps its id across restarts (TLS_DIR): after a crash it takes back its rows at once.
    identity = config.tunnels.agentPort > 0 ? await claimInstanceIdentity(config.tunnels.tlsDir) : { id: newId('inst').id, inherited: false };
  } catch (error) {
    await store.close();
    throw new StartupError('TLS_DIR', reason(error));
  }
  if (identity.unrecorded) logger.warn({ tls_dir: config.tunnels.tlsDir }, 'cannot record this instance in TLS_DIR; after a crash its sessions stay listed until the sweep (60 s)');
  const instanceId = identity.id;
  const tunnelRepository = new SqlTunnelRepository(store);
  const clusterAddr = config.tunnels.cluster.addr ?? null;
  const keeper = new InstanceKeeper(instanceId, tunnelRepository, logger, Date.now, clusterAddr);
  logger.info({ instance_id: instanceId, cluster_addr: clusterAddr }, 'instance identity');
  let dataPlane: DataPlane | undefined;
  // One set of instruments for the API and the data plane, rendered together on /metrics.
  const metrics = new Metrics();
  const ca = await clusterCertificateAuthority(config, store).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  let cluster: { cluster?: ClusterSettings };
  try {
    cluster = clusterSettings(config, store, ca, logger);
  } catch (error) {
    await store.close();
    throw error;
  }
  // Captured requests are written in batches off the request path; a failed batch is only logged.
  const inspection = new InspectionRecorder(
    new SqlInspectionRepository(store),
    config.console.inspectionKeep,
    (error) => logger.warn({ error: reason(error) }, 'traffic inspection: captured requests not written'),
    Date.now,
    // Replay tokens any instance of the cluster verifies: a replay is recorded by whichever proxy carries it.
    new ReplayTokens(config.tunnels.cluster.secret),
  );
  try {
    await keeper.start({ previousRunCrashed: identity.inherited });
    const ignored = config.tunnels.ignoredWithoutDataPlane;
    if (ignored.length > 0) logger.warn({ ignored }, `AGENT_PORT=0 turns the data plane off: ${ignored.join(', ')} opened nothing`);
    if (config.tunnels.agentPort > 0) {
      dataPlane = await createDataPlane({
        config: config.tunnels,
        maxPolicyRules: config.maxPolicyRules,
        instanceId,
        repository: tunnelRepository,
        edgeRoutes: new SqlEdgeRouteReader(store),
        reservations: sqlReservationReader(store),
        ca,
        acme: new SqlAcmeRepository(store),
        ...cluster,
        logger,
        metrics,
        inspection,
      });
    }
  } catch (error) {
    await keeper.stop();
    await store.close();
    throw new StartupError('AGENT_PORT/TLS_DIR', `cannot start the data plane: ${reason(error)}`);
  }
  const sessionControl: SessionControl = {
    // A session held here gets the command at once; another instance's takes it from the queue.
    async send(session, command) {
      if (session.instanceId === instanceId && dataPlane?.deliverLocally(session.id, command)) return;
      await tunnelRepository.enqueueCommand(session.instanceId, session.id, command, Date.now());
    },
  };
  const replay = dataPlane ? replaySender(inspection, config.tunnels) : undefined;
  const app = await buildApp({ config, store, logger, sessionControl, metrics, ...(replay ? { replay } : {}), ...(dataPlane ? { certificateNamesChanged: () => dataPlane?.certificateNamesChanged() } : {}) });
  const listeners: Listener[] = [httpListener(app, config), ...(dataPlane?.listeners ?? [])];
  const addresses: string[] = [];
  for (const listener of listeners) {
    try {
      addresses.push(await listener.listen());
    } catch (error) {
      await Promise.allSettled(listeners.map((each) => each.close(0)));
      await keeper.stop();
      await store.close();
      throw new StartupError(listenerVariable(listener.name, error), `cannot listen${listenerAddress(listener.name, config)}: ${reason(error)}`);
    }
  }
  dataPlane?.startBackground();
  // The console's charts: this instance's traffic counters, per minute, in the shared table.
  const rollup = new TrafficRollup(new SqlTrafficMinutes(store), instanceId, () => metrics.trafficTotals(), (error) =>
    logger.warn({ error: reason(error) }, 'traffic history: counts not written (added to the next write)'),
  );
  rollup.start();
  if (dataPlane?.caNotice) process.stderr.write(dataPlane.caNotice);
  const address = addresses[0]!;
  logger.info({ address, database: store.dialect, listeners: addresses }, 'burrow is listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Phase 1: every listener stops looking ready (/readyz 503); phase 2: the data plane stops
      // accepting and drains (agents get GOAWAY and move on) while the API still answers, so a
      // balancer's health check reads 503 rather than a refusal; then the API drains; then the store.
      const deadline = Date.now() + config.shutdownGraceMs;
      for (const listener of listeners) listener.beginShutdown();
      const [api, ...plane] = listeners;
      try {
        await Promise.all(plane.map((listener) => listener.close(config.shutdownGraceMs)));
        await api!.close(Math.max(0, deadline - Date.now()));
      } finally {
        dataPlane?.stopBackground();
        await rollup.close();
        await inspection.close();
        await keeper.stop();
        await store.close();
      }
    })());
  const reloadCertificates = () => dataPlane?.reloadCertificates() ?? Promise.resolve();
  return { app, store, address, stop, reloadCertificates };
}

/** Forwarding between instances: with CLUSTER_ADDR on PostgreSQL (SQLite is one instance), over links of the cluster CA. */
function clusterSettings(config: Config, store: Store, ca: unknown, logger: Logger): { cluster?: ClusterSettings } {
  const addr = config.tunnels.cluster.addr;
  if (addr === undefined || config.tunnels.agentPort === 0) return {};
  if (store.dialect !== 'postgres') {
    logger.warn({ cluster_addr: addr }, 'CLUSTER_ADDR opens nothing on SQLite: one instance, nothing to forward');
    return {};
  }
  if (ca === undefined) throw new StartupError('CLUSTER_SECRET', 'CLUSTER_ADDR needs CLUSTER_SECRET: instances authenticate each other with certificates of the cluster CA');
  return { cluster: { addr, routes: new SqlRemoteRouteSource(store) } };
}

async function bootstrap(store: Store, config: Config, logger: Logger): Promise<void> {
  const result = await new AccountService(new SqlAccountRepository(store)).bootstrap(config.bootstrapApiKey);
  if (!result) return;
  if ('hadAccounts' in result) {
    logger.warn(
      { bootstrap_api_key_unused: config.bootstrapApiKey !== undefined },
      'the database already had accounts (made with the CLI) at its first start: no account, admin user or API key was bootstrapped; make them with burrow users create and burrow api-keys create',
    );
    return;
  }
  logger.info({ account_id: result.account.id, user_id: result.admin.id, api_key_id: result.key.id }, 'bootstrapped an empty database');
  if (result.generatedSecret !== undefined) {
    process.stderr.write(
      `\nburrow: created the first admin user (${result.admin.id}) and its API key:\n\n    ${result.generatedSecret}\n\n` +
        'Store it now: it will not be shown again. Send it as "Authorization: Bearer <key>".\n\n',
    );
  }
}
