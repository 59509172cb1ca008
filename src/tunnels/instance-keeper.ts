import type { DataPlaneRepository } from '../domain/tunnels/types.js';
import { INSTANCE_BEAT_MS } from '../domain/tunnels/failover.js';
import type { Logger } from '../observability/logger.js';

export { INSTANCE_BEAT_MS };
/**
 * After how long without a beat an instance's rows are swept by anyone. A bind that meets one
 * of its names or URLs proves it gone far sooner (domain/tunnels/failover.ts); the beat is
 * frequent (1 s) for that proof.
 */
export const INSTANCE_STALE_MS = 45_000;
const SWEEP_EVERY_MS = 10_000;

/**
 * Every instance (API-only ones too) beats in the `instances` table and sweeps the rows of
 * instances that stopped beating, so a crashed instance's sessions leave the API within 60 s
 * (45 s stale + a 10 s sweep interval + a beat).
 */
export class InstanceKeeper {
  private beatTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly startedAt = new Date().toISOString();

  constructor(
    readonly instanceId: string,
    private readonly repository: DataPlaneRepository,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    /** CLUSTER_ADDR, recorded with every beat for the other instances. */
    private readonly clusterAddr: string | null = null,
  ) {}

  /** `previousRunCrashed`: this id's previous run ended without cleaning up; its rows go first. */
  async start(options: { previousRunCrashed?: boolean } = {}): Promise<void> {
    if (options.previousRunCrashed) {
      // the previous run's id is reused after a clean stop too: only rows left behind are news
      const sessions = await this.repository.removeInstance(this.instanceId);
      if (sessions > 0) this.logger.info({ instance_id: this.instanceId, sessions }, 'removed the sessions of this instance\'s previous run, which stopped without cleaning up');
    }
    await this.repository.beat(this.instanceId, this.startedAt, this.now(), this.clusterAddr);
    this.beatTimer = setInterval(() => void this.beat(), INSTANCE_BEAT_MS);
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.beatTimer.unref();
    this.sweepTimer.unref();
    await this.sweep();
  }

  private async beat(): Promise<void> {
    try {
      await this.repository.beat(this.instanceId, this.startedAt, this.now(), this.clusterAddr);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not record that this instance is alive');
    }
  }

  async sweep(): Promise<void> {
    try {
      const swept = await this.repository.sweep(this.now() - INSTANCE_STALE_MS);
      if (swept > 0) this.logger.info({ instances: swept }, 'removed the sessions of instances that stopped without cleaning up');
    } catch (error) {
      this.logger.warn({ err: error }, 'could not sweep stale instances');
    }
  }

  /** A clean stop: this instance's rows go at once. */
  async stop(): Promise<void> {
    clearInterval(this.beatTimer);
    clearInterval(this.sweepTimer);
    try {
      await this.repository.removeInstance(this.instanceId);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not remove this instance rows; another instance will sweep them');
    }
  }
}
