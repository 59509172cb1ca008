import type { Socket } from 'node:net';
import { AgentRefusal, agentErrors } from '../../domain/tunnels/agent-errors.js';
import { executeBind } from '../../domain/tunnels/bind-execution.js';
import { planBind, planLabeled, type BindingSession, type BindRequestFacts, type BindRules } from '../../domain/tunnels/bind-plan.js';
import type { BoundTarget, EdgeSettings } from '../../domain/tunnels/binds.js';
import { AuthThrottle, type AuthThrottleOptions } from '../../domain/tunnels/auth-throttle.js';
import type { AgentCredential, AgentIngress, IngressLimits, IngressRepository } from '../../domain/tunnels/ingress.js';
import type { TunnelSession } from '../../domain/tunnels/types.js';
import { planTunnelPatch } from '../../domain/tunnels/tunnel-patch.js';
import { readRebindToken, rebindToken } from '../../domain/tunnels/tokens.js';
import type { EndpointKind } from '../../domain/policy/index.js';
import type { Logger } from '../../observability/logger.js';
import { MuxadoSession } from '../muxado/index.js';
import {
  AgentConnection,
  AgentError,
  echoBindOpts,
  type AuthRequest,
  type AuthResponse,
  type BindRequest,
  type BindResponse,
  type PatchTunnelStateRequest,
  type StartTunnelWithLabelRequest,
} from '../protocol/index.js';
import type { AgentConnections, LiveTunnel, TunnelRegistry } from '../registry.js';
import { LiveBinds } from './live-binds.js';
import type { BindReservations } from '../../domain/reservations/bind-check.js';

/** Refusals that count against the address's Auth throttle: a malformed or unknown authtoken. */
const WRONG_TOKEN: ReadonlySet<number> = new Set([105, 107]);

export interface AgentSessionSettings {
  readonly edge: EdgeSettings;
  readonly limits: IngressLimits;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatToleranceMs: number;
  readonly authTimeoutMs: number;
  /** Counts each bind by result (`ok` or the refusal's code). */
  readonly observeBind?: (result: string) => void;
  /** Reserved names and addresses that binds honour (CERTIFICATES.md §0). */
  readonly reservations?: BindReservations;
  /** Counts each Auth by result (`ok` or the refusal's code). */
  readonly observeAuth?: (result: string) => void;
  /** Failed Auths allowed per client address (default AUTH_THROTTLE). */
  readonly authThrottle?: AuthThrottleOptions;
  /**
   * In a cluster: at shutdown, removes this instance's tunnels, endpoints and claims from the
   * database, so that the others stop routing here and the agents' binds elsewhere take them.
   */
  readonly withdrawRoutes?: () => Promise<void>;
}

/** After the withdrawal, how long the other instances have to see it before the agents drain. */
const WITHDRAW_SETTLE_MS = 1_000;

/** A tunnel as this instance holds it: the routing entry plus what is needed to undo it. */
export interface HeldTunnel extends LiveTunnel {
  readonly target: BoundTarget | undefined;
}

/** One authenticated agent session on this instance. */
export class LiveSession {
  readonly tunnels = new Map<string, HeldTunnel>();
  /** Set when a Stop went to the agent: an agent that closes on it ends the session as 'stopped'. */
  stopSent = false;
  constructor(
    readonly record: TunnelSession,
    /** Replaced when its ACL changes (revocation.ts). */
    public credential: AgentCredential,
    readonly connection: AgentConnection,
  ) {}

  get id(): string {
    return this.record.id;
  }
}

/**
 * The agent sessions of this instance: the protocol handlers (thin: read the request, ask the
 * domain, shape the answer) and the live state the public side routes by.
 */
export class AgentSessions implements AgentConnections {
  private readonly sessions = new Map<string, LiveSession>();
  /** Auths in flight by the session id they ask to resume, each told of an end of that id. */
  private readonly endWatches = new Map<string, Set<EndWatch>>();
  /** Ends in progress by session id (an Auth that starts meanwhile waits for it too). */
  private readonly ending = new Map<string, Promise<void>>();
  private readonly binds: LiveBinds;
  private readonly bindRules: BindRules;
  private readonly authThrottle: AuthThrottle;
  private shuttingDown = false;

  constructor(
    private readonly ingress: AgentIngress,
    private readonly repository: IngressRepository,
    readonly registry: TunnelRegistry,
    private readonly settings: AgentSessionSettings,
    private readonly logger: Logger,
  ) {
    this.binds = new LiveBinds(ingress, repository, registry, settings.edge, settings.reservations);
    this.bindRules = { edge: settings.edge, maxEndpointsPerSession: settings.limits.maxEndpointsPerSession, maxPolicyRules: settings.limits.maxPolicyRules };
    this.authThrottle = new AuthThrottle(settings.authThrottle);
  }

  get size(): number {
    return this.sessions.size;
  }

  get(sessionId: string): LiveSession | undefined {
    return this.sessions.get(sessionId);
  }

  connectionOf(sessionId: string): AgentConnection | undefined {
    return this.sessions.get(sessionId)?.connection;
  }

  all(): IterableIterator<LiveSession> {
    return this.sessions.values();
  }

  /** Takes a TLS connection from the agent listener. */
  accept(socket: Socket): void {
    const mux = new MuxadoSession(socket, { side: 'server', nudgeAcks: true });
    const ip = socket.remoteAddress ?? '';
    let live: LiveSession | undefined;
    const connection = new AgentConnection(mux, {
      authTimeoutMs: this.settings.authTimeoutMs,
      heartbeat: { intervalMs: this.settings.heartbeatIntervalMs, toleranceMs: this.settings.heartbeatToleranceMs },
      region: this.settings.edge.region,
      handlers: {
        auth: (req, ctx) =>
          refusals(async () => {
            const result = await this.login(req, ip, ctx.connection);
            live = result.live;
            return result.response;
          }),
        bind: (req) => refusals(() => this.bind(required(live), req)),
        unbind: (req) => refusals(() => this.unbind(required(live), req.id)),
        startTunnelWithLabel: (req) => refusals(() => this.startLabeled(required(live), req)),
        patchTunnelState: (req) => refusals(() => this.patchTunnel(required(live), req)),
      },
    });
    connection.on('close', (reason: string) => {
      if (live) void this.end(live, live.stopSent ? 'stopped' : reason);
    });
    connection.on('streamError', (info: unknown) => this.logger.debug({ stream: info, session_id: live?.id }, 'agent stream refused or malformed'));
    connection.on('handlerError', (error: unknown, type: string) => this.logger.error({ err: error, stream_type: type }, 'agent request failed'));
    socket.on('error', () => {}); // the muxado session reports transport errors as its close
  }

  /** Auth, throttled per client address: too many wrong authtokens and the address is refused unread for a while. */
  private async login(req: AuthRequest, ip: string, connection: AgentConnection): Promise<{ live: LiveSession; response: AuthResponse }> {
    const wait = this.authThrottle.waitSeconds(ip);
    if (wait > 0) {
      this.settings.observeAuth?.('ERR_NGROK_717');
      throw agentErrors.tooManyFailedAuths(wait);
    }
    try {
      const result = await this.authenticate(req, ip, connection);
      this.settings.observeAuth?.('ok');
      return result;
    } catch (error) {
      if (!(error instanceof AgentRefusal)) throw error;
      this.settings.observeAuth?.(error.errorCode);
      // a refused login leaves a line (never the token): an operator can see guessing
      this.logger.info({ event: 'session_refused', ip, result: error.errorCode, agent_version: req.extra.version, os: req.extra.os }, 'agent session refused');
      if (WRONG_TOKEN.has(error.code) && this.authThrottle.failed(ip)) {
        this.logger.warn({ event: 'agent_auth_throttled', ip }, 'too many failed agent Auths from one address: its Auths are refused for a while');
      }
      throw error;
    }
  }

  private async authenticate(req: AuthRequest, ip: string, connection: AgentConnection): Promise<{ live: LiveSession; response: AuthResponse }> {
    if (this.shuttingDown) throw agentErrors.shuttingDown();
    const extra = req.extra;
    // The old connection's end may run while this Auth writes the resumed row, and remove it (its
    // close raced this reconnect): watch for that end, let it finish, then write the row again.
    const watch = this.watchEnds(req.clientId);
    let authenticated: Awaited<ReturnType<AgentIngress['authenticate']>>;
    try {
      authenticated = await this.ingress.authenticate({
        token: extra.authToken,
        ip,
        os: extra.os,
        agentVersion: extra.version,
        metadata: extra.metadata,
        stopUnsupported: extra.stopUnsupportedError,
        restartUnsupported: extra.restartUnsupportedError,
        updateUnsupported: extra.updateUnsupportedError,
        previousId: req.clientId,
        cookie: extra.cookie,
      });
      if (watch.ending && authenticated.session.id === req.clientId) {
        await watch.ending;
        await this.ingress.recordSession(authenticated.session);
      }
    } finally {
      this.unwatchEnds(req.clientId, watch);
    }
    const { session, credential, cookie } = authenticated;
    // A session exists only while its connection does: one that closed while this Auth ran gets none.
    if (connection.closed) return this.abandon(session);
    // A reconnect that resumed its id replaces what is left of the old connection.
    const previous = this.sessions.get(session.id);
    if (previous) await this.end(previous, 'resumed', { keepRecord: true });
    if (connection.closed) return this.abandon(session);
    const live = new LiveSession(session, credential, connection);
    this.sessions.set(session.id, live);
    this.logger.info(
      { event: 'session_start', session_id: session.id, account_id: session.accountId, credential_id: credential.id, ip, agent_version: session.agentVersion, os: session.os },
      'agent session started',
    );
    return {
      live,
      response: {
        clientId: session.id,
        extra: { version: 'burrow', region: session.region, cookie, accountName: session.accountId, sessionDuration: 0, planName: 'burrow', banner: '' },
      },
    };
  }

  /** Removes the row an Auth wrote for a connection that closed meanwhile (unless a live session holds the id). */
  private async abandon(session: TunnelSession): Promise<never> {
    if (!this.sessions.has(session.id)) await this.repository.deleteSession(session.id, session.instanceId);
    this.logger.info({ event: 'session_abandoned', session_id: session.id, ip: session.ip }, 'agent connection closed during its Auth: no session');
    throw new AgentError(0, 'connection closed during authentication');
  }

  private async bind(live: LiveSession, req: BindRequest): Promise<BindResponse> {
    try {
      const response = this.heldTunnelAnswer(live, req) ?? (await this.tryBind(live, req));
      this.logger.info({ event: 'bind', session_id: live.id, tunnel_id: response.id, proto: req.proto, url: response.url, result: 'ok' }, 'tunnel bound');
      this.settings.observeBind?.('ok');
      return response;
    } catch (error) {
      // every bind has its line (TUNNELS.md §6); an unexpected failure's error is logged by the connection
      const result = error instanceof AgentRefusal ? error.errorCode : 'internal_error';
      this.logger.info({ event: 'bind', session_id: live.id, proto: req.proto, result }, 'bind refused');
      this.settings.observeBind?.(result);
      throw error;
    }
  }

  /**
   * Once its Auth is answered, the classic agent binds again every tunnel it asked for, with the
   * Id it was given, including one whose Bind it sent during the Auth and that is already served:
   * a Bind naming a tunnel this session holds, asking for nothing else, is answered with it.
   */
  private heldTunnelAnswer(live: LiveSession, req: BindRequest): BindResponse | undefined {
    const tunnel = live.tunnels.get(req.id);
    const bound = tunnel?.target;
    if (!tunnel || tunnel.url === null || !bound || tunnel.proto !== req.proto) return undefined;
    // a Token sent must be this tunnel's: one that proves nothing gets a new tunnel, as on any rebind
    if (req.extra.token !== '' && !readRebindToken(live.credential.tokenHash, tunnel.id, req.extra.token)) return undefined;
    const { hostname, addr } = req.options;
    const host = this.settings.edge.publicHost;
    if (bound.kind === 'hostname' ? hostname !== '' && hostname !== bound.hostname : addr !== '' && addr !== `${host}:${bound.port}`) return undefined;
    const opts = echoBindOpts(tunnel.proto, req.opts, bound.kind === 'tcp' ? { addr: `${host}:${bound.port}` } : { hostname: bound.hostname });
    return { id: tunnel.id, url: tunnel.url, proto: tunnel.proto, opts, token: rebindToken(live.credential.tokenHash, tunnel.id, bound) };
  }

  /** The bind use case (domain/tunnels/bind-plan.ts, bind-execution.ts) on this session. */
  private async tryBind(live: LiveSession, req: BindRequest): Promise<BindResponse> {
    const session = await this.bindingSession(live);
    const plan = planBind(bindFacts(req), session, this.bindRules, this.isServed(req.id), new Date().toISOString());
    if (plan.refusal) throw plan.refusal;
    const { placement } = await executeBind(plan, {
      claims: this.binds,
      pools: this.binds,
      insertTunnel: (row) => this.repository.insertTunnel(row),
      deleteTunnel: (id) => this.repository.deleteTunnel(id, live.record.instanceId),
      serve: ({ placement, pool }) => {
        const tunnel: HeldTunnel = {
          id: plan.tunnelId,
          sessionId: live.id,
          accountId: live.record.accountId,
          proto: plan.proto,
          url: placement.url,
          labels: null,
          proxyProto: req.options.proxyProto,
          policy: plan.policy,
          target: placement.bound,
        };
        pool.add(tunnel);
        live.tunnels.set(tunnel.id, tunnel);
        this.registry.routesChanged();
      },
    });
    const opts = echoBindOpts(plan.proto, req.opts, placement.boundOpts);
    return { id: plan.tunnelId, url: placement.url, proto: plan.proto, opts, token: placement.token };
  }

  private async startLabeled(live: LiveSession, req: StartTunnelWithLabelRequest): Promise<{ id: string }> {
    const plan = planLabeled(req, await this.bindingSession(live), this.bindRules, new Date().toISOString());
    if (plan.refusal) {
      this.logger.info({ event: 'bind', session_id: live.id, proto: 'labeled', result: plan.refusal.errorCode }, 'bind refused');
      this.settings.observeBind?.(plan.refusal.errorCode);
      throw plan.refusal;
    }
    const { row } = plan;
    await this.repository.insertTunnel(row);
    const tunnel: HeldTunnel = { id: row.id, sessionId: live.id, accountId: live.record.accountId, proto: '', url: null, labels: row.labels, proxyProto: 0, policy: plan.policy, target: undefined };
    live.tunnels.set(tunnel.id, tunnel);
    this.registry.addLabeled(tunnel);
    this.registry.routesChanged();
    this.logger.info({ event: 'bind', session_id: live.id, tunnel_id: tunnel.id, proto: 'labeled', result: 'ok' }, 'labeled tunnel started');
    this.settings.observeBind?.('ok');
    return { id: tunnel.id };
  }

  /**
   * PatchTunnelState (newest GO agents' `Update`): a new traffic policy applies to the tunnel's
   * next connections and requests (and shows on its endpoint when the tunnel is its pool's
   * oldest); new metadata shows on the tunnel. Checked as a bind's policy is; a refused
   * patch changes nothing.
   */
  private async patchTunnel(live: LiveSession, req: PatchTunnelStateRequest): Promise<void> {
    const tunnel = live.tunnels.get(req.tunnelId);
    if (!tunnel) throw agentErrors.unknownTunnel(req.tunnelId);
    const pool = tunnel.url === null ? undefined : this.registry.pool(tunnel.url);
    const plan = planTunnelPatch(
      req,
      { labeled: tunnel.url === null, poolingEnabled: pool?.poolingEnabled ?? false, policy: tunnel.policy, kind: endpointKindOf(tunnel.url), hostname: hostnameOf(tunnel.url) },
      this.settings.limits.maxPolicyRules,
    );
    if (plan.metadata !== undefined) await this.repository.updateTunnelMetadata(tunnel.id, plan.metadata);
    if (plan.policy !== undefined) {
      // set before the write: the write wakes other instances, which then ask for the tunnel's policy
      if (pool) pool.setPolicy(tunnel, plan.policy);
      else tunnel.policy = plan.policy;
      // any tunnel of the pool (the endpoint shows the first's policy): its new updated_at makes other instances describe the pool again
      if (pool) await this.repository.updateEndpointPolicy(pool.endpointId, pool.policy.source?.trafficPolicy ?? '', new Date().toISOString());
    }
    this.logger.info({ event: 'tunnel_patch', session_id: live.id, tunnel_id: tunnel.id, policy: plan.policy !== undefined, metadata: plan.metadata !== undefined }, 'tunnel state patched');
  }

  /** Removes one tunnel; unknown ids and repeats are fine (the npm SDK unbinds twice). */
  async unbind(live: LiveSession, tunnelId: string): Promise<void> {
    const tunnel = live.tunnels.get(tunnelId);
    if (!tunnel) return;
    live.tunnels.delete(tunnelId);
    // off this instance's routes before any query (so at once, whatever the database's pace)
    if (tunnel.url === null) this.registry.removeLabeled(tunnelId);
    const emptied = tunnel.url !== null ? this.registry.removeFromPool(tunnel.url, tunnelId) : undefined;
    const deleted = this.repository.deleteTunnel(tunnelId, live.record.instanceId);
    // The endpoint row goes before the claim, or another instance could claim it and meet the row;
    // both after the tunnel row when the pool emptied: one passes to an instance still serving it
    // (CLUSTER.md §2), which must not see this one's tunnel then.
    const released = async () => {
      if (emptied) await deleted.then(() => this.ingress.closeEndpoint(emptied.endpointId, emptied.poolingEnabled));
      if (tunnel.target) await this.binds.release(tunnel.target, tunnel.accountId);
    };
    await Promise.all([deleted, released()]);
  }

  /**
   * Ends a session: its tunnels, its rows, its claims. Safe to call twice. `keepRecord`: the
   * session row stays (a reconnect resumed the id and has already written its own row).
   */
  async end(live: LiveSession, reason: string, options: { keepRecord?: boolean } = {}): Promise<void> {
    if (this.sessions.get(live.id) !== live) return;
    this.sessions.delete(live.id);
    const done: Promise<void> = this.tearDown(live, reason, options).finally(() => {
      if (this.ending.get(live.id) === done) this.ending.delete(live.id);
    });
    this.ending.set(live.id, done);
    for (const watch of this.endWatches.get(live.id) ?? []) watch.ending = done;
    await done;
  }

  private watchEnds(sessionId: string): EndWatch {
    const watch: EndWatch = {};
    if (sessionId === '') return watch;
    const inProgress = this.ending.get(sessionId);
    if (inProgress) watch.ending = inProgress;
    const watches = this.endWatches.get(sessionId) ?? new Set();
    watches.add(watch);
    this.endWatches.set(sessionId, watches);
    return watch;
  }

  private unwatchEnds(sessionId: string, watch: EndWatch): void {
    const watches = this.endWatches.get(sessionId);
    watches?.delete(watch);
    if (watches?.size === 0) this.endWatches.delete(sessionId);
  }

  private async tearDown(live: LiveSession, reason: string, options: { keepRecord?: boolean }): Promise<void> {
    if (!live.connection.closed) live.connection.goAwayAndClose();
    try {
      // side by side: session_end (and the routes leaving the other instances) waits for the slowest, not the sum
      const removed = await Promise.allSettled([
        ...[...live.tunnels.keys()].map((tunnelId) => this.unbind(live, tunnelId)),
        options.keepRecord ? undefined : this.repository.deleteSession(live.id, live.record.instanceId),
      ]);
      for (const outcome of removed) if (outcome.status === 'rejected') throw outcome.reason;
    } catch (error) {
      this.logger.error({ err: error, session_id: live.id }, 'could not remove an ended session; the instance sweep will');
    }
    this.logger.info({ event: 'session_end', session_id: live.id, reason }, 'agent session ended');
  }

  /**
   * The session as a bind sees it, with its credential's ACL as stored now: a bind sees an ACL
   * change at once (TUNNELS.md §2); revocation.ts applies the change to the tunnels already bound.
   */
  private async bindingSession(live: LiveSession): Promise<BindingSession> {
    const stored = await this.repository.findCredential(live.credential.id);
    return {
      id: live.id,
      accountId: live.record.accountId,
      instanceId: live.record.instanceId,
      principalId: live.credential.ownerId,
      tokenHash: live.credential.tokenHash,
      credentialId: live.credential.id,
      acl: stored?.acl,
      tunnelCount: live.tunnels.size,
    };
  }

  /** An id some session here still serves (this one, or another that was shown its Id and Token) is not taken over by a rebind. */
  private isServed(tunnelId: string): boolean {
    for (const live of this.sessions.values()) if (live.tunnels.has(tunnelId)) return true;
    return false;
  }

  /** Phase 1 of shutdown: refuse new sessions; each live one gets GOAWAY once its proxy streams are done. */
  beginShutdown(): void {
    this.shuttingDown = true;
    this.registry.draining = true;
    const drain = () => {
      for (const live of this.sessions.values()) live.connection.drainAndClose('server shutting down');
    };
    const withdraw = this.settings.withdrawRoutes;
    if (!withdraw) return drain();
    // The others stop routing here first (their requests wait for the agents' next instance,
    // route-waits.ts); what they forward meanwhile is still served, then the agents get GOAWAY.
    void withdraw()
      .catch((error: unknown) => this.logger.warn({ error: (error as Error).message }, 'could not withdraw this instance\'s routes before draining; the agents move anyway'))
      .then(() => new Promise((resolve) => setTimeout(resolve, WITHDRAW_SETTLE_MS)))
      .then(drain);
  }

  /** Sessions still open (draining their proxy streams, during a shutdown). */
  get openCount(): number {
    let open = 0;
    for (const live of this.sessions.values()) if (!live.connection.closed) open++;
    return open;
  }

  async closeAll(reason: string): Promise<void> {
    await Promise.all([...this.sessions.values()].map((live) => this.end(live, reason)));
  }
}

/** What an Auth that may resume a session id learns of an end of that id while it runs. */
interface EndWatch {
  ending?: Promise<void>;
}

function bindFacts(req: BindRequest): BindRequestFacts {
  const { options, extra } = req;
  return {
    id: req.id,
    token: extra.token,
    proto: req.proto,
    hostname: options.hostname,
    domain: options.domain,
    subdomain: options.subdomain,
    addr: options.addr,
    trafficPolicy: options.trafficPolicy,
    ipRestriction: options.ipRestriction,
    otherOptions: options.otherOptions,
    ipPolicyRef: extra.ipPolicyRef,
    bindings: extra.bindings,
    poolingEnabled: extra.poolingEnabled,
    forwardsTo: req.forwardsTo,
    metadata: extra.metadata,
    endpointOptions: req.opts,
  };
}

function required(live: LiveSession | undefined): LiveSession {
  // The protocol layer serves nothing but Auth before Auth succeeded.
  if (!live) throw new AgentError(109, 'The authentication payload you specified is not valid.');
  return live;
}

/** Domain refusals become the protocol's error replies; anything else stays a server error. */
async function refusals<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AgentRefusal) throw new AgentError(error.code, error.message);
    throw error;
  }
}

/** The kind of the endpoint at `url` (its scheme); tcp for a labeled tunnel (no URL). */
function endpointKindOf(url: string | null): EndpointKind {
  const scheme = url === null ? 'tcp' : url.slice(0, url.indexOf(':'));
  return scheme === 'http' || scheme === 'https' || scheme === 'tls' ? scheme : 'tcp';
}

/** The host name of an http or https endpoint's URL (undefined otherwise). */
function hostnameOf(url: string | null): string | undefined {
  if (url === null || !/^https?:/.test(url)) return undefined;
  return url.replace(/^https?:\/\//, '').split(/[:/]/, 1)[0]!.toLowerCase();
}
