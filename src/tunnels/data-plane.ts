import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { TunnelConfig } from '../config.js';
import type { EdgeSettings } from '../domain/tunnels/binds.js';
import { AgentIngress, type IngressRepository } from '../domain/tunnels/ingress.js';
import type { DataPlaneRepository, SessionCommand } from '../domain/tunnels/types.js';
import { Failover, type FailoverRepository } from '../domain/tunnels/failover.js';
import { MovingNames } from '../domain/tunnels/moving-names.js';
import { MAX_ROUTE_WAITERS, ROUTE_WAIT_MS, RouteWaits } from '../domain/tunnels/route-waits.js';
import { addressAnswers } from './address-probe.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { AgentListener } from './agents/agent-listener.js';
import { AgentSessions } from './agents/agent-sessions.js';
import { TlsFailureLog } from './agents/tls-failures.js';
import { RevocationWatch } from './agents/revocation.js';
import { SessionCommands } from './agents/session-commands.js';
import { TunnelRegistry } from './registry.js';
import { createPublicTraffic, type PublicListener } from './public/index.js';
import { EdgeRouting } from './edges/edge-routing.js';
import type { EdgeRouteReader } from '../domain/edges/types.js';
import { agentTlsMaterial, edgeTlsMaterial } from './tls/material.js';
import { certificateUpkeep } from './tls/upkeep.js';
import type { CertificateAuthority } from './tls/ca.js';
import { EdgeCertificates } from './public/edge-certificates.js';
import { BindReservations, type ReservationReader } from '../domain/reservations/bind-check.js';
import { ReservationWatch } from './agents/reservation-watch.js';
import type { InspectionSink } from './public/capture.js';
import type { AcmeRepository } from '../domain/acme/types.js';
import { acmeCertificates, orderOnBind } from './tls/acme/setup.js';
import { clusterForwarding, type ClusterForwarding, type ClusterSettings } from './cluster/setup.js';
import { sealingKey } from '../domain/sealing.js';
import { loadOrCreateSealingSecret } from './tls/acme/sealing-secret.js';

export interface DataPlaneOptions {
  readonly config: TunnelConfig;
  readonly maxPolicyRules: number;
  readonly instanceId: string;
  readonly repository: IngressRepository & DataPlaneRepository & FailoverRepository;
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /** TLS edges by their hostport host (across accounts); without it no edge is served. */
  readonly edgeRoutes?: EdgeRouteReader;
  /** Reserved domains and addresses; without them every name is first-come. */
  readonly reservations?: ReservationReader;
  /** The cluster CA (CLUSTER_SECRET); without it, TLS_DIR's own CA issues the certificates. */
  readonly ca?: CertificateAuthority;
  /** The traffic inspector; without it nothing is captured. */
  readonly inspection?: InspectionSink;
  /** ACME state (CERTIFICATES.md §1); used when ACME_DIRECTORY_URL is set. */
  readonly acme?: AcmeRepository;
  /** Several instances (CLUSTER_ADDR on PostgreSQL, with the cluster CA): forwarding between them. */
  readonly cluster?: ClusterSettings;
}

/** The listeners and background work of the data plane, for app/ to start and stop. */
export interface DataPlane {
  /** The agent port, then the public ones (TCP endpoints, EDGE_HTTP_PORT, EDGE_TLS_PORT). */
  readonly listeners: readonly (AgentListener | PublicListener | ClusterForwarding['listener'])[];
  readonly sessions: AgentSessions;
  /** Sends a command to a session held here; false when it is not. */
  deliverLocally(sessionId: string, command: SessionCommand): boolean;
  /** Reads the certificate files again now (SIGHUP); a bad new pair keeps the old one, logged. */
  reloadCertificates(): Promise<void>;
  /** A reserved domain or TLS edge changed: with ACME, the names they need are ordered now. */
  certificateNamesChanged(): void;
  /** What an operator needs to know once: where the CA is and how agents trust it. */
  readonly caNotice: string | undefined;
  startBackground(): void;
  stopBackground(): void;
}

export function edgeSettingsOf(config: TunnelConfig): EdgeSettings {
  return {
    edgeDomain: config.edgeDomain,
    publicHost: config.edgePublicHost,
    tcpPorts: config.edgeTcpPorts,
    region: config.region,
    httpPort: config.edgeHttpPort === 0 ? undefined : config.edgePublicHttpPort,
    tlsPort: config.edgeTlsPort === 0 ? undefined : config.edgePublicTlsPort,
  };
}

export async function createDataPlane(options: DataPlaneOptions): Promise<DataPlane> {
  const { config, repository } = options;
  // With several instances, each line says which one wrote it (session_start, session_end, …).
  const logger = options.logger.child({ instance_id: options.instanceId });
  const loadAgentTls = () =>
    agentTlsMaterial({ tlsDir: config.tlsDir, certFile: config.agentTlsCert, keyFile: config.agentTlsKey, extraHostname: config.agentHostname, ca: options.ca });
  const material = await loadAgentTls();
  for (const warning of material.warnings) logger.warn({ warning }, 'agent TLS certificate');
  const edge = edgeSettingsOf(config);
  const ingress = new AgentIngress(
    repository,
    edge,
    {
      maxSessionsPerAccount: config.maxSessionsPerAccount,
      maxEndpointsPerSession: config.maxEndpointsPerSession,
      maxPolicyRules: options.maxPolicyRules,
    },
    options.instanceId,
    undefined,
    new Failover(repository, options.instanceId, addressAnswers, {
      onTakeover: (instance, sessions) => logger.info({ event: 'instance_taken_over', gone_instance_id: instance, sessions }, 'released the names, ports and URLs of an instance proven gone'),
    }),
  );
  const registry = new TunnelRegistry(new RouteWaits(ROUTE_WAIT_MS, MAX_ROUTE_WAITERS, new MovingNames({ windowMs: config.cluster.routeWaitWindowMs })));
  const reservations = options.reservations
    ? new BindReservations(options.reservations, { requireReservedNames: config.requireReservedNames, edgeDomain: edge.edgeDomain, publicHost: edge.publicHost, region: edge.region })
    : undefined;
  const sessions = new AgentSessions(
    ingress,
    repository,
    registry,
    { edge, limits: { maxSessionsPerAccount: config.maxSessionsPerAccount, maxEndpointsPerSession: config.maxEndpointsPerSession, maxPolicyRules: options.maxPolicyRules }, heartbeatIntervalMs: 10_000, heartbeatToleranceMs: 20_000, authTimeoutMs: 10_000, observeBind: options.metrics ? (result) => options.metrics!.observeBind(result) : undefined, observeAuth: options.metrics ? (result) => options.metrics!.observeAuth(result) : undefined, reservations, ...(options.cluster ? { withdrawRoutes: () => repository.withdrawRoutes(options.instanceId) } : {}) },
    logger,
  );
  const tlsFailures = new TlsFailureLog(logger, (reason) => options.metrics?.observeAgentTlsFailure(reason));
  const agentListener = new AgentListener({ host: config.agentHost, port: config.agentPort, cert: material.cert, key: material.key }, sessions, tlsFailures);
  const revocation = new RevocationWatch(sessions, repository, edge, logger);
  const reservationWatch = reservations ? new ReservationWatch(sessions, reservations, logger) : undefined;
  const commands = new SessionCommands(options.instanceId, sessions, repository, logger);
  const loadEdgeTls = () => edgeTlsMaterial({ tlsDir: config.tlsDir, certFile: config.edgeTlsCert, keyFile: config.edgeTlsKey, edgeDomain: config.edgeDomain, ca: options.ca });
  const edgeTls = config.edgeTlsPort > 0 ? await loadEdgeTls() : undefined;
  for (const warning of edgeTls?.warnings ?? []) logger.warn({ warning }, 'edge TLS certificate');
  // names the edge certificate covers get it, not an ACME one (the closure runs once both exist)
  const covered = (name: string): boolean => edgeCertificates?.covers(name) ?? false;
  const acme = options.acme ? await acmeCertificates(config, options.acme, registry, options.instanceId, logger, options.metrics, covered) : undefined;
  const edgeCertificates = edgeTls ? new EdgeCertificates(edgeTls, acme) : undefined;
  if (acme) orderOnBind(acme, registry, covered);
  const certificates = await certificateUpkeep(
    config,
    logger,
    { material, load: loadAgentTls, apply: ({ cert, key }) => agentListener.replaceCertificate(cert, key) },
    edgeTls && edgeCertificates ? { material: edgeTls, load: loadEdgeTls, apply: (m) => edgeCertificates.replace(m), certificates: edgeCertificates } : undefined,
  );
  options.metrics?.gaugeCertificates(() => [...certificates.served(), ...(acme?.summaries() ?? [])]);
  if (options.cluster && !options.ca) throw new Error('forwarding between instances needs the cluster CA (CLUSTER_SECRET)');
  const cluster = options.cluster && options.ca ? await clusterForwarding({ settings: options.cluster, instanceId: options.instanceId, ca: options.ca, registry, agents: sessions, agentsOpen: () => sessions.openCount, logger }) : undefined;
  const publicListeners = createPublicTraffic({
    host: config.edgeHost,
    httpPort: config.edgeHttpPort,
    tlsPort: config.edgeTlsPort,
    edge,
    registry,
    agents: sessions,
    edgeCertificates,
    edges: options.edgeRoutes ? new EdgeRouting(options.edgeRoutes, registry, options.maxPolicyRules, logger, config.edgePublicTlsPort) : undefined,
    logger,
    metrics: options.metrics,
    acme,
    tcpLimits: { idleTimeoutMs: config.edgeTcpIdleTimeoutMs, connectionsPerClient: config.edgeTcpConnectionsPerClient },
    proxyProtocolFrom: config.cluster.proxyProtocolFrom,
    inspection: options.inspection,
    remote: cluster?.remote,
    loginSecret: config.edgeHttpPort > 0 || config.edgeTlsPort > 0 ? await loginSecret(config, logger) : undefined,
  });
  options.metrics?.gaugeDataPlane({
    sessions: () => sessions.size,
    tunnelsByProto: () => {
      // every proto always has its series: one that reads 0 rather than one that vanishes
      const counts = new Map<string, number>([['http', 0], ['https', 0], ['tcp', 0], ['tls', 0], ['labeled', 0]]);
      for (const live of sessions.all()) for (const tunnel of live.tunnels.values()) counts.set(tunnel.proto || 'labeled', (counts.get(tunnel.proto || 'labeled') ?? 0) + 1);
      return counts;
    },
  });
  // the names its certificate carries: localhost, or the AGENT_HOSTNAME agents are told to dial
  const agentHost = config.agentHostname ?? 'localhost';
  const agentAddress = `${agentHost.includes(':') ? `[${agentHost}]` : agentHost}:${config.agentPort === 0 ? '<AGENT_PORT>' : config.agentPort}`;
  const caNotice = material.createdCa && material.caPath ? await noticeFor(material.caPath, agentAddress) : undefined;
  return {
    listeners: [agentListener, ...publicListeners, ...(cluster ? [cluster.listener] : [])],
    sessions,
    deliverLocally: (sessionId, command) => commands.deliverLocally(sessionId, command),
    reloadCertificates: () => certificates.reload(),
    certificateNamesChanged: () => void acme?.namesChanged(),
    caNotice,
    startBackground() {
      void acme?.start();
      revocation.start();
      reservationWatch?.start();
      commands.start();
      certificates.start();
      cluster?.startBackground();
    },
    stopBackground() {
      acme?.stop();
      revocation.stop();
      reservationWatch?.stop();
      commands.stop();
      certificates.stop();
      cluster?.stopBackground();
    },
  };
}

async function noticeFor(tlsDirCaPath: string, agentAddress: string): Promise<string> {
  await readFile(tlsDirCaPath, 'utf8');
  // absolute: an agent runs from its own directory (or a service manager's)
  const caPath = resolve(tlsDirCaPath);
  return (
    `\nburrow: created a private certificate authority for the agent port: ${caPath}\n` +
    `Agents must trust it. With the SDK:  new ngrok.SessionBuilder().serverAddr("${agentAddress}").caCert(fs.readFileSync("${caPath}"))\n` +
    `With the agent config:  server_addr: ${agentAddress}   root_cas: ${caPath}\n` +
    `burrow agent-config prints both in full for this server.\n\n`
  );
}

/**
 * The secret edge login cookies are sealed under: TLS_DIR/sealing.key, so instances sharing it
 * read each other's. A TLS_DIR that cannot hold it (read-only, say) does not stop the start: this
 * process's own key then, and logins last until it stops.
 */
/**
 * The secret edge login cookies are sealed under: CLUSTER_SECRET when set, so that a login made
 * through one instance holds on every instance of the cluster (the balancer may send the next
 * request anywhere); else TLS_DIR's sealing secret.
 */
async function loginSecret(config: TunnelConfig, logger: Logger): Promise<Uint8Array> {
  if (config.cluster.secret !== undefined) return sealingKey(config.cluster.secret, 'edge login secret');
  try {
    return await loadOrCreateSealingSecret(config.tlsDir);
  } catch (error) {
    logger.warn({ reason: (error as Error).message }, 'edge login sessions use a key of this process only: they end when it stops and other instances do not read them');
    return randomBytes(32);
  }
}
