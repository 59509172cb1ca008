import type { BindReservations } from '../../domain/reservations/bind-check.js';
import type { ReservableTarget } from '../../domain/reservations/bind-rule.js';
import { agentErrors, type AgentRefusal } from '../../domain/tunnels/agent-errors.js';
import type { Logger } from '../../observability/logger.js';
import type { AgentSessions, HeldTunnel, LiveSession } from './agent-sessions.js';
import { polling } from './polling.js';
import { stopHeldTunnel } from './revocation.js';

/**
 * Applies reservation changes to live tunnels (CERTIFICATES.md §0), as RevocationWatch does ACL
 * changes: a name or address now reserved by another account, or (REQUIRE_RESERVED_NAMES) no
 * longer reserved, stops its tunnel; so does deleting the reserved address a tunnel is bound on.
 * Polls the database, so a change made through any instance lands within one interval.
 */
export class ReservationWatch {
  /** Tunnels bound on a port their account had reserved at the last check. */
  private onReservedPort = new Set<string>();
  /** The tunnels of the last round, and the reservations' version it saw. */
  private seen = new Set<string>();
  private version: string | undefined;
  private readonly loop = polling(400, () => this.check());

  constructor(
    private readonly sessions: AgentSessions,
    private readonly reservations: BindReservations,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.loop.start();
  }

  stop(): void {
    this.loop.stop();
  }

  async check(): Promise<void> {
    if (this.sessions.size === 0) return;
    try {
      const held: { session: LiveSession; tunnel: HeldTunnel; target: ReservableTarget; accountId: string }[] = [];
      for (const session of this.sessions.all()) {
        for (const tunnel of session.tunnels.values()) {
          if (tunnel.target) held.push({ session, tunnel, target: tunnel.target, accountId: session.record.accountId });
        }
      }
      if (held.length === 0) return;
      // read first: a change made while this round runs is seen by the next one
      const version = await this.reservations.version();
      const changed = version !== this.version;
      // unchanged reservations: only tunnels bound since the last round need a look
      const checked = changed ? held : held.filter(({ tunnel }) => !this.seen.has(tunnel.id));
      const refusals = checked.length > 0 ? await this.reservations.refusals(checked) : [];
      const ports = checked.flatMap(({ target }) => (target.kind === 'tcp' ? [target.port] : []));
      const owners = ports.length > 0 ? await this.reservations.owners([...new Set(ports)]) : new Map<number, string>();
      const live = new Set(held.map(({ tunnel }) => tunnel.id));
      const onReservedPort = new Set(changed ? [] : [...this.onReservedPort].filter((id) => live.has(id)));
      const ended = new Set<LiveSession>();
      for (const [index, { session, tunnel, target, accountId }] of checked.entries()) {
        let refusal: AgentRefusal | null = refusals[index] ?? null;
        if (target.kind === 'tcp') {
          if (owners.get(target.port) === accountId) onReservedPort.add(tunnel.id);
          else if (!refusal && this.onReservedPort.has(tunnel.id)) {
            // its reservation was deleted: the address is no longer the account's
            const { publicHost, region } = this.reservations.settings;
            refusal = agentErrors.addressNotReserved(`${publicHost}:${target.port}`, accountId, region);
          }
        }
        if (!refusal || ended.has(session) || !session.tunnels.has(tunnel.id)) continue;
        this.logger.info({ event: 'tunnel_revoked', session_id: session.id, tunnel_id: tunnel.id, error_code: refusal.errorCode }, 'reservation changed: stopping a tunnel');
        if (!(await stopHeldTunnel(this.sessions, session, tunnel.id, refusal, 'reservation-changed'))) ended.add(session);
      }
      this.onReservedPort = onReservedPort;
      this.seen = live;
      this.version = version;
    } catch (error) {
      this.logger.warn({ err: error }, 'could not check reservations of live tunnels');
    }
  }
}
