import { isWellFormedAuthtoken, secretKsuid, secretMatchesHash } from '../secrets.js';
import { isIdOf, newId } from '../ids.js';
import { isResumeProof, resumeProof } from './tokens.js';
import { compileBindPolicy, type ConnectionPolicy, type IpRestrictionOption } from './connection-policy.js';
import { agentErrors } from './agent-errors.js';
import { claimKey, publicUrl, resolveBindTarget, checkLabels, type BindAsk, type BindTarget, type EdgeSettings } from './binds.js';
import type { Endpoint, Tunnel, TunnelSession } from './types.js';

/** A credential as the agent ingress needs it: what it may bind, and how to check its token. */
export interface AgentCredential {
  readonly id: string;
  readonly accountId: string;
  readonly ownerId: string;
  readonly acl: readonly string[];
  readonly tokenHash: string;
}

/** Storage the agent ingress writes through (implemented in storage/, one statement each). */
export interface IngressRepository {
  /** A credential of a live (unrevoked) account, or undefined. */
  findCredential(id: string): Promise<AgentCredential | undefined>;
  /** Sessions of the account, not counting `exceptId` (a session resuming its id). */
  countSessions(accountId: string, exceptId?: string): Promise<number>;
  /**
   * For a session resuming its id here: removes the tunnels and endpoints another instance
   * recorded for it (that instance lost the agent, maybe by dying), so its rebinds, which keep
   * their ids and URLs, do not collide with them.
   */
  forgetSessionElsewhere(sessionId: string, instanceId: string): Promise<void>;
  insertSession(session: TunnelSession): Promise<void>;
  /** Removes a session with its tunnels, its endpoints and this instance's claims no tunnel still uses. */
  deleteSession(id: string): Promise<void>;
  /** Claims `key` for the account on this instance; returns the account that holds it. */
  claim(key: string, accountId: string, instanceId: string, claimedAt: string): Promise<string>;
  release(key: string, accountId: string, instanceId: string): Promise<void>;
  /** Inserts the endpoint unless its URL is taken; returns false when it is. */
  insertEndpoint(endpoint: Endpoint): Promise<boolean>;
  deleteEndpoint(id: string): Promise<void>;
  insertTunnel(tunnel: Tunnel): Promise<void>;
  deleteTunnel(id: string): Promise<void>;
  /** PatchTunnelState: the tunnel's metadata (durable before it resolves). */
  updateTunnelMetadata(id: string, metadata: string): Promise<void>;
  /** PatchTunnelState: the endpoint's traffic policy as the API shows it (durable before it resolves). */
  updateEndpointPolicy(id: string, trafficPolicy: string, updatedAt: string): Promise<void>;
}

export interface IngressLimits {
  /** 0 = no limit. */
  readonly maxSessionsPerAccount: number;
  readonly maxEndpointsPerSession: number;
  readonly maxPolicyRules: number;
}

/** What the agent says about itself in Auth, already read case-insensitively. */
export interface AgentHello {
  readonly token: string;
  readonly ip: string;
  readonly os: string;
  readonly agentVersion: string;
  readonly metadata: string;
  readonly stopUnsupported: string | null;
  readonly restartUnsupported: string | null;
  readonly updateUnsupported: string | null;
  /** On a reconnect: the previous `ClientId` and `Cookie`. */
  readonly previousId: string;
  readonly cookie: string;
}

export interface Clock {
  now(): Date;
}

/** Options of a bind that decide who may connect, validated at bind time. */
export interface BindPolicyOptions {
  /** A policy document (JSON or YAML) sent with the bind, or undefined. */
  readonly trafficPolicy: string | undefined;
  readonly ipRestriction: IpRestrictionOption | null;
  /** Options set in the bind that burrow does not serve (refused by name). */
  readonly unservedOptions: readonly string[];
  /** The bind's `Opts`, whose options served as rules (OPTIONS_AS_RULES) run on http and https endpoints. */
  readonly endpointOptions?: Readonly<Record<string, unknown>>;
}

/** The decisions of TUNNELS.md §2–§3, over the repository; the protocol layer stays thin. */
export class AgentIngress {
  constructor(
    private readonly repository: IngressRepository,
    private readonly edge: EdgeSettings,
    private readonly limits: IngressLimits,
    private readonly instanceId: string,
    private readonly clock: Clock = { now: () => new Date() },
  ) {}

  /** Checks the token (105 / 107) and the session limit (108), then records the session. */
  async authenticate(hello: AgentHello): Promise<{ session: TunnelSession; credential: AgentCredential; cookie: string }> {
    const token = hello.token;
    if (!isWellFormedAuthtoken(token)) throw agentErrors.malformedToken(token);
    const credential = await this.repository.findCredential(`cr_${secretKsuid(token)}`);
    if (!credential || !secretMatchesHash(token, credential.tokenHash)) throw agentErrors.invalidToken(token);
    const resumed = isIdOf(hello.previousId, 'ts') && isResumeProof(credential.tokenHash, hello.previousId, hello.cookie);
    const max = this.limits.maxSessionsPerAccount;
    // A resumed session is the same session: its old row (left by a crash) does not count.
    const others = await this.repository.countSessions(credential.accountId, resumed ? hello.previousId : undefined);
    if (max > 0 && others >= max) throw agentErrors.tooManySessions(max);
    if (resumed) await this.repository.forgetSessionElsewhere(hello.previousId, this.instanceId);
    const { id, createdAt } = newId('ts');
    const session: TunnelSession = {
      id: resumed ? hello.previousId : id,
      accountId: credential.accountId,
      credentialId: credential.id,
      instanceId: this.instanceId,
      ip: hello.ip,
      metadata: hello.metadata,
      os: hello.os,
      agentVersion: hello.agentVersion,
      region: this.edge.region,
      startedAt: createdAt,
      stopUnsupported: hello.stopUnsupported,
      restartUnsupported: hello.restartUnsupported,
      updateUnsupported: hello.updateUnsupported,
    };
    await this.repository.insertSession(session);
    return { session, credential, cookie: resumeProof(credential.tokenHash, session.id) };
  }

  /** Writes a session's row again (after an old connection's end removed it: agent-sessions). */
  recordSession(session: TunnelSession): Promise<void> {
    return this.repository.insertSession(session);
  }

  endSession(sessionId: string): Promise<void> {
    return this.repository.deleteSession(sessionId);
  }

  /**
   * Resolves and checks a bind's target (ACL, options, policy). Claims and endpoints are made
   * by `claimTarget` / `openEndpoint`, which need the instance's live view of its pools.
   */
  checkBind(ask: BindAsk, credential: AgentCredential, options: BindPolicyOptions): { target: BindTarget; policy: ConnectionPolicy } {
    const [unserved] = options.unservedOptions;
    if (unserved !== undefined) throw agentErrors.unservedOption(unserved, ask.proto);
    const target = resolveBindTarget(ask, credential, this.edge);
    // Validated as the REST API validates: a phase the endpoint's kind does not run is ERR_NGROK_2230.
    const http = ask.proto === 'http' || ask.proto === 'https';
    const policy = compileBindPolicy(options.trafficPolicy, options.ipRestriction, this.limits.maxPolicyRules, ask.proto, http ? options.endpointOptions : undefined);
    return { target, policy };
  }

  checkLabels(labels: Readonly<Record<string, string>>, credential: AgentCredential): void {
    checkLabels(labels, credential);
  }

  /** Claims a name or port for the account (320 / 309 when another account holds it). */
  async claim(target: { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number }, accountId: string): Promise<void> {
    const key = claimKey(target);
    const holder = await this.repository.claim(key, accountId, this.instanceId, this.clock.now().toISOString());
    if (holder === accountId) return;
    if (target.kind === 'hostname') throw agentErrors.domainTaken(target.hostname, accountId);
    throw agentErrors.addressTaken(`${this.edge.publicHost}:${target.port}`, accountId);
  }

  release(target: { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number }, accountId: string): Promise<void> {
    return this.repository.release(claimKey(target), accountId, this.instanceId);
  }

  /** The URL a bound target is served at. */
  urlOf(target: { kind: 'hostname'; proto: 'http' | 'https' | 'tls'; hostname: string } | { kind: 'tcp'; port: number }): string {
    if (target.kind === 'tcp') return publicUrl('tcp', this.edge.publicHost, target.port);
    return publicUrl(target.proto, target.hostname, target.proto === 'http' ? this.edge.httpPort : this.edge.tlsPort);
  }
}

