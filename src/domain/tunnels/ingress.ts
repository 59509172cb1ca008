import { isWellFormedAuthtoken, secretKsuid, secretMatchesHash } from '../secrets.js';
import { isIdOf, newId } from '../ids.js';
import { isResumeProof, resumeProof } from './tokens.js';
import { agentErrors } from './agent-errors.js';
import { takenRefusal } from './bind-plan.js';
import { claimKey, type EdgeSettings } from './binds.js';
import type { Endpoint, Tunnel, TunnelSession } from './types.js';
import type { Failover } from './failover.js';

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
  /**
   * Removes the session's row and tunnels as `instanceId` recorded them: a session resumed on
   * another instance meanwhile (a drain, a failover) keeps the rows written there.
   */
  deleteSession(id: string, instanceId: string): Promise<void>;
  /** Claims `key` for the account on this instance; returns who holds it (undefined: released meanwhile). */
  claim(key: string, accountId: string, instanceId: string, claimedAt: string): Promise<ClaimHolder | undefined>;
  /**
   * Gives up this instance's claim; one that another instance's endpoint of the same account
   * still serves (its agent moved there) passes to that instance instead of going.
   */
  release(key: string, accountId: string, instanceId: string): Promise<void>;
  /** Inserts the endpoint unless its URL is taken; returns false when it is. */
  insertEndpoint(endpoint: Endpoint): Promise<boolean>;
  /** The endpoint serving `url` and who holds its row, undefined when none does. */
  endpointAt(url: string): Promise<EndpointHolding | undefined>;
  /**
   * Stops `instanceId` holding the endpoint row: it passes to another instance with a tunnel in
   * the endpoint (a pooled endpoint spread over instances), else goes. Nothing when another
   * instance holds it. Locks the row, so a bind joining the endpoint meanwhile is seen or sees.
   */
  releaseEndpoint(id: string, instanceId: string): Promise<void>;
  /**
   * After a bind's tunnel row naming `endpoint.id` is written into an endpoint it did not open:
   * keeps the claim of `key` and the endpoint row, writing them again for `endpoint.instanceId`
   * when their holder let them go meanwhile. 'name-taken' / 'url-taken' when another account or
   * endpoint took them; nothing is written then.
   */
  keepJoined(endpoint: Endpoint, key: string, claimedAt: string): Promise<JoinedKeeping>;
  /** Removes an endpoint row of this instance no other serves (not pooled, or a bind that lost a race). */
  deleteEndpoint(id: string): Promise<void>;
  insertTunnel(tunnel: Tunnel): Promise<void>;
  /** Removes the tunnel row as `instanceId` recorded it (a rebind elsewhere keeps the id: its row stays). */
  deleteTunnel(id: string, instanceId: string): Promise<void>;
  /** PatchTunnelState: the tunnel's metadata (durable before it resolves). */
  updateTunnelMetadata(id: string, metadata: string): Promise<void>;
  /** PatchTunnelState: the endpoint's traffic policy as the API shows it (durable before it resolves). */
  updateEndpointPolicy(id: string, trafficPolicy: string, updatedAt: string): Promise<void>;
}

/** An endpoint row as a bind of its URL sees it. */
export interface EndpointHolding {
  readonly id: string;
  readonly instanceId: string;
  readonly accountId: string;
  readonly poolingEnabled: boolean;
}

export type JoinedKeeping = 'kept' | 'name-taken' | 'url-taken';

/** The endpoint a bind's new pool serves: its own row, or another instance's it joined (CLUSTER.md §2). */
export interface EndpointOpening {
  readonly endpointId: string;
  readonly joined: boolean;
}

/** Who holds a claimed name or port. */
export interface ClaimHolder {
  readonly accountId: string;
  readonly instanceId: string;
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

/** The decisions of TUNNELS.md §2 and the claims of §3, over the repository (a bind's own rules: bind-plan.ts). */
export class AgentIngress {
  constructor(
    private readonly repository: IngressRepository,
    private readonly edge: EdgeSettings,
    private readonly limits: IngressLimits,
    private readonly instanceId: string,
    private readonly clock: Clock = { now: () => new Date() },
    /** Releases the claims and URLs of an instance proven gone (CLUSTER.md §3); without it they wait for the sweep. */
    private readonly failover?: Failover,
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

  /** Removes a session's row and tunnels as this instance recorded them. */
  endSession(sessionId: string): Promise<void> {
    return this.repository.deleteSession(sessionId, this.instanceId);
  }

  /**
   * Claims a name or port for the account (320 / 309 when another account holds it). A claim
   * of the same account held by another instance is shared (its agent may be moving here); one
   * of another account held by an instance proven gone is released first.
   */
  async claim(target: { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number }, accountId: string): Promise<void> {
    const key = claimKey(target);
    const claimOnce = () => this.repository.claim(key, accountId, this.instanceId, this.clock.now().toISOString());
    let holder = await claimOnce();
    if (holder && holder.accountId !== accountId && (await this.releasedIfGone(holder.instanceId))) holder = await claimOnce();
    if (holder?.accountId !== accountId) throw takenRefusal(target, accountId, this.edge);
  }

  /**
   * Writes the endpoint row of a new pool; undefined when another instance's endpoint serves the
   * URL and that instance is alive. A pooled endpoint of the same account held by another
   * instance is joined instead, when this bind pools too (CLUSTER.md §2); one left by an instance
   * proven gone is released first.
   */
  async openEndpoint(endpoint: Endpoint): Promise<EndpointOpening | undefined> {
    const opened = { endpointId: endpoint.id, joined: false };
    if (await this.repository.insertEndpoint(endpoint)) return opened;
    const holder = await this.repository.endpointAt(endpoint.url);
    if (holder && mayJoin(holder, endpoint)) return { endpointId: holder.id, joined: true };
    if (holder !== undefined && !(await this.releasedIfGone(holder.instanceId))) return undefined;
    return (await this.repository.insertEndpoint(endpoint)) ? opened : undefined;
  }

  /**
   * Once the tunnel row of a bind into an endpoint it did not open is written (`endpointId`):
   * keeps that endpoint's row and claim, which their holder may be letting go at this moment
   * (its last tunnel leaving). 334 / 320 when the URL or name went to someone else meanwhile.
   */
  async keepJoined(endpoint: Endpoint, endpointId: string): Promise<void> {
    const target = endpoint.proto === 'tcp' ? ({ kind: 'tcp', port: endpoint.port } as const) : ({ kind: 'hostname', hostname: endpoint.host } as const);
    const kept = await this.repository.keepJoined({ ...endpoint, id: endpointId }, claimKey(target), this.clock.now().toISOString());
    if (kept === 'url-taken') throw agentErrors.alreadyOnline(endpoint.url);
    if (kept === 'name-taken') throw takenRefusal(target, endpoint.accountId, this.edge);
  }

  /**
   * This instance stops serving the endpoint: its row passes to another instance still serving
   * it, else goes. Only a pooled endpoint can be served elsewhere (a join needs pooling on both
   * sides): another is this instance's own and simply goes, in one statement.
   */
  closeEndpoint(endpointId: string, pooled: boolean): Promise<void> {
    return pooled ? this.repository.releaseEndpoint(endpointId, this.instanceId) : this.repository.deleteEndpoint(endpointId);
  }

  private releasedIfGone(instanceId: string): Promise<boolean> {
    return this.failover && instanceId !== this.instanceId ? this.failover.releaseIfGone(instanceId) : Promise.resolve(false);
  }

  release(target: { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number }, accountId: string): Promise<void> {
    return this.repository.release(claimKey(target), accountId, this.instanceId);
  }
}


/** Another instance's endpoint a bind may share: the same account's, both asking for pooling. */
function mayJoin(holder: EndpointHolding, endpoint: Endpoint): boolean {
  return holder.instanceId !== endpoint.instanceId && holder.accountId === endpoint.accountId && holder.poolingEnabled && endpoint.poolingEnabled;
}
