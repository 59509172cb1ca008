import { agentErrors, AgentRefusal } from '../../domain/tunnels/agent-errors.js';
import type { EndpointPools, TargetClaims } from '../../domain/tunnels/bind-execution.js';
import { poolRefusal, takenRefusal } from '../../domain/tunnels/bind-plan.js';
import { publicUrl, type BindTarget, type BoundTarget, type EdgeSettings } from '../../domain/tunnels/binds.js';
import type { AgentIngress, IngressRepository } from '../../domain/tunnels/ingress.js';
import type { Endpoint } from '../../domain/tunnels/types.js';
import { randomBytes } from 'node:crypto';
import { nthPort, portCount } from '../../domain/tunnels/ports.js';
import type { BindReservations } from '../../domain/reservations/bind-check.js';
import { EndpointPool, type TunnelRegistry } from '../registry.js';

type Claimable = { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number };

const RANDOM_PORT_ATTEMPTS = 64;

/**
 * Claims held by this instance, counted by use: a claim row is made by the first local tunnel
 * on a name or port and released with the last one, so the database sees one claim per key.
 * A local count belongs to one account: another account's bind of the same key is refused
 * here (320 / 309), never counted as a use of the holder's claim.
 */
export class LiveBinds implements TargetClaims, EndpointPools<EndpointPool> {
  private readonly claimUses = new Map<string, { accountId: string; uses: number }>();

  constructor(
    private readonly ingress: AgentIngress,
    private readonly repository: IngressRepository,
    private readonly registry: TunnelRegistry,
    private readonly edge: EdgeSettings,
    /** Reserved names and addresses (CERTIFICATES.md §0); without them every name is first-come. */
    private readonly reservations?: BindReservations,
  ) {}

  /** Claims the target for the account (320 / 309), choosing a free port for a random TCP bind. */
  async claim(target: BindTarget, accountId: string): Promise<BoundTarget> {
    if (target.kind === 'tcp' && target.port === undefined) return this.claimRandomPort(accountId);
    const bound = target as BoundTarget;
    const refusal = await this.reservations?.refusal(bound, accountId);
    if (refusal) throw refusal;
    await this.claimOnce(bound, accountId);
    return bound;
  }

  private async claimOnce(target: Claimable, accountId: string): Promise<void> {
    const key = keyOf(target);
    let held = this.claimUses.get(key);
    if (held && held.accountId !== accountId) throw this.takenError(target, accountId);
    if (!held) {
      await this.ingress.claim(target, accountId);
      // Another account's bind may have claimed the key locally while the claim ran.
      held = this.claimUses.get(key);
      if (held && held.accountId !== accountId) throw this.takenError(target, accountId);
      if (!held) {
        if (target.kind === 'tcp') {
          try {
            await this.registry.tcpPorts.open(target.port);
          } catch (error) {
            // A port this machine cannot listen on is not served: give the claim back.
            await this.ingress.release(target, accountId);
            throw error;
          }
        }
        held = this.claimUses.get(key) ?? { accountId, uses: 0 };
        this.claimUses.set(key, held);
      }
    }
    held.uses++;
  }

  async release(target: Claimable, accountId: string): Promise<void> {
    const key = keyOf(target);
    const held = this.claimUses.get(key);
    if (held && held.accountId !== accountId) return;
    if (held && --held.uses > 0) return;
    this.claimUses.delete(key);
    // a port other instances' tunnels of the pooled endpoint still serve stays open (remote-tunnels.ts closes it with them)
    if (target.kind === 'tcp' && !this.registry.remotePool(publicUrl('tcp', this.edge.publicHost, target.port))) this.registry.tcpPorts.close(target.port);
    await this.ingress.release(target, accountId);
  }

  private takenError(target: Claimable, accountId: string): AgentRefusal {
    return takenRefusal(target, accountId, this.edge);
  }

  private async claimRandomPort(accountId: string): Promise<BoundTarget> {
    const ports = this.edge.tcpPorts;
    const total = portCount(ports);
    if (total === 0) throw agentErrors.noFreeAddress();
    const start = randomBytes(4).readUInt32BE(0) % total;
    // a reserved port is its account's, bound only by asking for its address
    const reserved = (await this.reservations?.reservedPorts()) ?? new Set<number>();
    // Walk the ranges from a random offset: free ports are found without a scan per attempt.
    for (let step = 0, attempts = 0; step < total && attempts < RANDOM_PORT_ATTEMPTS; step++) {
      const port = nthPort(ports, (start + step) % total);
      if (this.claimUses.has(`tcp:${port}`) || reserved.has(port)) continue;
      attempts++;
      try {
        await this.claimOnce({ kind: 'tcp', port }, accountId);
        return { kind: 'tcp', port };
      } catch (error) {
        // Held by another account (on another instance): try the next port.
        if (!(error instanceof AgentRefusal)) throw error;
      }
    }
    throw agentErrors.noFreeAddress();
  }

  /**
   * Joins the URL's pool, or opens one: with a new endpoint row, or joining the pooled endpoint
   * another instance holds (CLUSTER.md §2). A second bind of one URL needs pooling on both sides
   * (else 334), as does an endpoint held by another instance.
   */
  async join(
    url: string,
    pooling: boolean,
    endpoint: Endpoint,
    /** The URL that would take this one's connections (tls and https of one name share the TLS port's SNI). */
    rival: string | undefined,
  ): Promise<EndpointPool> {
    const refusal = () => poolRefusal(url, pooling, this.registry.pool(url), rival === undefined ? undefined : { url: rival, online: this.registry.pool(rival) !== undefined });
    const refused = refusal();
    if (refused) throw refused;
    const existing = this.registry.pool(url);
    if (existing) return existing;
    const opening = await this.ingress.openEndpoint(endpoint);
    if (!opening) throw agentErrors.alreadyOnline(url);
    // Another bind of the same URL (or of its rival) may have opened a pool while the insert ran.
    const raced = this.registry.pool(url);
    const racedRefusal = refusal();
    if ((raced || racedRefusal) && !opening.joined) await this.repository.deleteEndpoint(endpoint.id);
    if (racedRefusal) throw racedRefusal;
    if (raced) return raced;
    const pool = new EndpointPool(url, opening.endpointId, pooling);
    this.registry.addPool(pool);
    return pool;
  }

  async settle(pool: EndpointPool, endpoint: Endpoint): Promise<void> {
    if (pool.endpointId !== endpoint.id) await this.ingress.keepJoined(endpoint, pool.endpointId);
  }

  async closeIfEmpty(url: string): Promise<void> {
    const emptied = this.registry.removeIfEmpty(url);
    if (emptied) await this.ingress.closeEndpoint(emptied.endpointId, emptied.poolingEnabled);
  }

  /** Whether a bind of `url` would find it free here: no pool yet, or a pooling one it may join. */
  mayJoin(url: string, pooling: boolean): boolean {
    const existing = this.registry.pool(url);
    return !existing || (existing.poolingEnabled && pooling);
  }
}

function keyOf(target: Claimable): string {
  return target.kind === 'hostname' ? `host:${target.hostname}` : `tcp:${target.port}`;
}
