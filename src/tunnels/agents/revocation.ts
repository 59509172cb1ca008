import { aclRefusalFor, type EdgeSettings, type HeldTarget } from '../../domain/tunnels/binds.js';
import type { DataPlaneRepository } from '../../domain/tunnels/types.js';
import type { AgentRefusal } from '../../domain/tunnels/agent-errors.js';
import type { Logger } from '../../observability/logger.js';
import type { AgentSessions, LiveSession } from './agent-sessions.js';
import { polling, type Polling } from './polling.js';

/**
 * Applies credential changes to live sessions (TUNNELS.md §2): a deleted credential (or revoked
 * account) closes its sessions, a narrowed ACL stops the tunnels it no longer permits. On
 * PostgreSQL a change made through any instance wakes it at once (NOTIFY); the poll catches what
 * that misses, within one interval.
 */
export class RevocationWatch {
  private readonly loop: Polling;

  constructor(
    private readonly sessions: AgentSessions,
    private readonly repository: DataPlaneRepository,
    private readonly edge: EdgeSettings,
    private readonly logger: Logger,
    intervalMs = 400,
  ) {
    const watch = repository.watch?.bind(repository, 'credentials');
    this.loop = polling(intervalMs, () => this.check(), watch, (error) => logger.warn({ err: error }, 'credential changes: not notified, polling only'));
  }

  start(): void {
    this.loop.start();
  }

  stop(): void {
    this.loop.stop();
  }

  async check(): Promise<void> {
    if (this.sessions.size === 0) return;
    try {
      const live = [...this.sessions.all()];
      const acls = await this.repository.liveCredentials([...new Set(live.map((session) => session.credential.id))]);
      const ending: Promise<void>[] = [];
      for (const session of live) {
        const acl = acls.get(session.credential.id);
        if (acl === undefined) {
          this.logger.info({ event: 'session_revoked', session_id: session.id, credential_id: session.credential.id }, 'credential deleted: closing its session');
          // every revoked session at once: one's teardown does not delay the next one's end
          ending.push(this.sessions.end(session, 'credential-deleted'));
        } else if (!sameRules(acl, session.credential.acl)) {
          session.credential = { ...session.credential, acl };
          await this.applyAcl(session);
        }
      }
      await Promise.all(ending);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not check credentials of live sessions');
    }
  }

  private async applyAcl(session: LiveSession): Promise<void> {
    for (const tunnel of [...session.tunnels.values()]) {
      const target: HeldTarget | undefined =
        tunnel.labels !== null ? { kind: 'labels', labels: tunnel.labels } : tunnel.target;
      if (!target) continue;
      const refusal = aclRefusalFor(target, session.credential, this.edge);
      if (!refusal) continue;
      this.logger.info({ event: 'tunnel_revoked', session_id: session.id, tunnel_id: tunnel.id, error_code: refusal.errorCode }, 'ACL narrowed: stopping a tunnel');
      if (!(await stopHeldTunnel(this.sessions, session, tunnel.id, refusal, 'acl-narrowed'))) return;
    }
  }
}

/**
 * Stops a tunnel that is no longer permitted: StopTunnel with the refusal for a protocol-3 agent;
 * a protocol-2 agent has none, so its whole session ends (TUNNELS.md §2). False when it ended.
 */
export async function stopHeldTunnel(sessions: AgentSessions, session: LiveSession, tunnelId: string, refusal: AgentRefusal, endReason: string): Promise<boolean> {
  if (session.connection.version === '3') {
    await sessions.unbind(session, tunnelId);
    void session.connection.stopTunnel(tunnelId, refusal.message, refusal.errorCode).catch(() => undefined);
    return true;
  }
  await sessions.end(session, endReason);
  return false;
}

function sameRules(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((rule, index) => rule === b[index]);
}
