/**
 * Failover of a dead instance's claims (CLUSTER.md §3): a bind that meets a name, port or URL
 * held by another instance asks whether that instance is gone, and if it is, removes its rows at
 * once instead of leaving them to the 60 s sweep. A live instance is never robbed: it is gone
 * only once its row has gone unrefreshed for GONE_AFTER_SILENCE_MS while it was being watched,
 * and any beat seen meanwhile, or its cluster address answering, proves it alive.
 */

/** How often an instance records that it is alive (`instances.last_seen_at`). */
export const INSTANCE_BEAT_MS = 1_000;
/** Three missed beats: a process that is alive and can reach the database beats within this. */
export const GONE_AFTER_SILENCE_MS = 3 * INSTANCE_BEAT_MS;
/** How often a watched holder's row is read again. */
const WATCH_EVERY_MS = 250;

/** An instance as its liveness row says. */
export interface InstanceRecord {
  /** Unix milliseconds of its last beat. */
  readonly lastSeenAtMs: number;
  /** CLUSTER_ADDR, null without one. */
  readonly clusterAddr: string | null;
}

export interface FailoverRepository {
  /** The instance's liveness row, undefined when it is gone (removed or swept). */
  instanceRecord(instanceId: string): Promise<InstanceRecord | undefined>;
  /** Removes the instance and what it held; resolves with how many sessions it still had. */
  removeInstance(instanceId: string): Promise<number>;
}

/** Whether something accepts connections at the address within a short time. */
export type AddressProbe = (address: string) => Promise<boolean>;

export type Verdict = 'gone' | 'alive' | 'unsure';

/**
 * The rule, as a pure function: `first` is the row when the watch began, `now` the row read
 * last. No row: gone. A beat since the watch began, or its address answering: alive. Silent for
 * GONE_AFTER_SILENCE_MS: gone. Otherwise not known yet.
 */
export function judgeInstance(first: InstanceRecord | undefined, current: InstanceRecord | undefined, nowMs: number, answers: boolean): Verdict {
  if (!current) return 'gone';
  if (answers) return 'alive';
  if (first && current.lastSeenAtMs > first.lastSeenAtMs) return 'alive';
  return nowMs - current.lastSeenAtMs >= GONE_AFTER_SILENCE_MS ? 'gone' : 'unsure';
}

export interface FailoverOptions {
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Told when a gone instance's rows are removed, for the log. */
  readonly onTakeover?: (instanceId: string, sessions: number) => void;
}

export class Failover {
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** One watch per holder at a time: concurrent binds of one dead instance's names wait together. */
  private readonly watches = new Map<string, Promise<boolean>>();

  constructor(
    private readonly repository: FailoverRepository,
    private readonly selfId: string,
    private readonly probe: AddressProbe,
    private readonly options: FailoverOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * Resolves true once `holderId` is proven gone and its rows are removed (the caller may try
   * again), false when it is alive. Waits at most about GONE_AFTER_SILENCE_MS for a verdict.
   */
  releaseIfGone(holderId: string): Promise<boolean> {
    if (holderId === this.selfId) return Promise.resolve(false);
    const running = this.watches.get(holderId);
    if (running) return running;
    const watch = this.watch(holderId).finally(() => this.watches.delete(holderId));
    this.watches.set(holderId, watch);
    return watch;
  }

  private async watch(holderId: string): Promise<boolean> {
    const first = await this.repository.instanceRecord(holderId);
    const deadline = this.now() + GONE_AFTER_SILENCE_MS + INSTANCE_BEAT_MS;
    // asked once: an address that answers proves the process alive, one that does not proves nothing
    const answers = first?.clusterAddr ? await this.probe(first.clusterAddr) : false;
    for (let current = first; ; current = await this.repository.instanceRecord(holderId)) {
      const verdict = judgeInstance(first, current, this.now(), answers);
      if (verdict === 'alive') return false;
      if (verdict === 'gone') {
        const sessions = current ? await this.repository.removeInstance(holderId) : 0;
        this.options.onTakeover?.(holderId, sessions);
        return true;
      }
      // a row that never goes silent long enough ends as alive: the deadline is a safety net
      if (this.now() >= deadline) return false;
      await this.sleep(WATCH_EVERY_MS);
    }
  }
}
