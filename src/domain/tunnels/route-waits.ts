/**
 * A public connection whose name has no usable route waits briefly for one (CLUSTER.md §3): while
 * an agent moves from a draining instance to another, its endpoint is unrouted for the moment
 * between the old instance withdrawing it and the new one binding it, and a connection arriving
 * then should be served once the bind lands, not answered 404 or 502. Waiters are woken by the
 * routing table's changes (local binds, the routing cache's refreshes) and checked on a short
 * poll besides; the wait and the number of waiters are bounded. Only names whose agent may be
 * moving wait (`moving`, moving-names.ts): a name never routed is answered at once.
 */
import { MovingNames } from './moving-names.js';

export const ROUTE_WAIT_MS = 4_000;
export const MAX_ROUTE_WAITERS = 1_000;
/** A change nobody woke the waiters for is still found within this. */
const POLL_MS = 200;

interface Waiter {
  check(): boolean;
}

export class RouteWaits {
  private readonly waiters = new Set<Waiter>();
  private poll: NodeJS.Timeout | undefined;

  constructor(
    private readonly waitMs = ROUTE_WAIT_MS,
    private readonly maxWaiters = MAX_ROUTE_WAITERS,
    /** The names worth a wait: told of each withdrawal by the routing table. */
    readonly moving = new MovingNames(),
  ) {}

  /**
   * Resolves with `find()`'s first answer other than undefined: at once when it has one, else
   * once a change brings one, or undefined after the wait (at once when too many already wait).
   */
  until<T>(find: () => T | undefined): Promise<T | undefined> {
    const found = find();
    if (found !== undefined || this.waiters.size >= this.maxWaiters || this.waitMs <= 0) return Promise.resolve(found);
    return new Promise((resolve) => {
      const done = (value: T | undefined) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        if (this.waiters.size === 0) this.stopPolling();
        resolve(value);
      };
      const waiter: Waiter = {
        check: () => {
          const value = find();
          if (value === undefined) return false;
          done(value);
          return true;
        },
      };
      const timer = setTimeout(() => done(undefined), this.waitMs);
      this.waiters.add(waiter);
      if (!this.poll) {
        this.poll = setInterval(() => this.wake(), POLL_MS);
        this.poll.unref();
      }
    });
  }

  /** The routing table changed: every waiter looks again. */
  wake(): void {
    for (const waiter of [...this.waiters]) waiter.check();
  }

  get waiting(): number {
    return this.waiters.size;
  }

  private stopPolling(): void {
    clearInterval(this.poll);
    this.poll = undefined;
  }
}
