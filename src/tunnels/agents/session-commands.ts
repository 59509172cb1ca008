import type { DataPlaneRepository, SessionCommand } from '../../domain/tunnels/types.js';
import type { Logger } from '../../observability/logger.js';
import type { AgentSessions } from './agent-sessions.js';
import { polling, type Polling } from './polling.js';

/**
 * An agent that acknowledged Stop is leaving, but the SDK's `close()` puts nothing on the wire
 * (its GOAWAY is queued and never flushed; the socket stays open until the process exits), so
 * burrow would see the end only at the heartbeat timeout. It ends the session itself, after
 * this grace: the app's stop handler runs after the SDK's reply, and an SDK session that reads
 * our GOAWAY before the app called `close()` would take it for an outage and reconnect.
 */
const STOPPED_GRACE_MS = 600;

/**
 * Delivers Stop / Restart / Update to agents. The REST API may run on another instance, so it
 * queues commands in the database; the instance holding the session takes them when notified
 * (PostgreSQL), else within one
 * interval. A command for a session of this instance goes straight to the agent.
 */
export class SessionCommands {
  private readonly loop: Polling;

  constructor(
    private readonly instanceId: string,
    private readonly sessions: AgentSessions,
    private readonly repository: DataPlaneRepository,
    private readonly logger: Logger,
    intervalMs = 250,
  ) {
    // PostgreSQL's NOTIFY on a queued command wakes it at once; the interval catches what that misses
    const watch = repository.watch?.bind(repository, 'commands');
    this.loop = polling(intervalMs, () => this.poll(), watch, (error) => logger.warn({ err: error }, 'queued session commands: not notified, polling only'));
  }

  start(): void {
    this.loop.start();
  }

  stop(): void {
    this.loop.stop();
  }

  /** True when the session is held here and the command went to its agent. */
  deliverLocally(sessionId: string, command: SessionCommand): boolean {
    const live = this.sessions.get(sessionId);
    if (!live) return false;
    // an agent that closes on a Stop may do so before its answer is read here
    if (command === 'stop') live.stopSent = true;
    void live.connection.sendCommand(command).then(
      (outcome) => {
        this.logger.info({ event: 'session_command', session_id: sessionId, command, outcome: outcome.status }, 'command sent to agent');
        if (command === 'stop' && outcome.status === 'ok') setTimeout(() => void this.sessions.end(live, 'stopped'), STOPPED_GRACE_MS).unref();
      },
      (error: unknown) => this.logger.warn({ err: error, session_id: sessionId, command }, 'command could not be sent'),
    );
    return true;
  }

  private async poll(): Promise<void> {
    try {
      for (const { sessionId, command } of await this.repository.takeCommands(this.instanceId)) this.deliverLocally(sessionId, command);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read queued session commands');
    }
  }
}
