/**
 * Where the tunnels held by other instances are (CLUSTER.md §2): a copy of the database's live
 * tunnels of every other instance with a cluster address, refreshed when a bind or unbind
 * anywhere notifies (PostgreSQL LISTEN/NOTIFY) and every `checkIntervalMs` besides, which
 * recovers a notification missed while the listening connection was down. Each refresh hands
 * the differences to `apply`, one refresh at a time; requests during one make one more after it.
 * A route `apply` could not take (its holder unreachable, or not yet serving a tunnel whose row
 * it has just written) is tried again soon, backing off to the periodic check.
 */

/** One live tunnel held by another instance, as the database lists it. */
export interface RemoteRoute {
  readonly tunnelId: string;
  readonly sessionId: string;
  readonly accountId: string;
  readonly instanceId: string;
  /** The holder's CLUSTER_ADDR (host:port). */
  readonly clusterAddr: string;
  /** Empty for a labeled tunnel. */
  readonly proto: string;
  /** Null for a labeled tunnel. */
  readonly url: string | null;
  readonly labels: Readonly<Record<string, string>> | null;
  readonly endpointId: string | null;
  readonly poolingEnabled: boolean;
  /** Changes at each patch of a policy of the endpoint's tunnels (its policy version): the route is described again. */
  readonly version: string;
}

/** The storage port of the routing cache. */
export interface RemoteRouteSource {
  /** Every live tunnel held by an instance other than `instanceId` that has a cluster address. */
  tunnelsElsewhere(instanceId: string): Promise<RemoteRoute[]>;
  /** Calls `onChange` whenever a tunnel or endpoint changes on any instance; resolves with how to stop. */
  watch(onChange: () => void): Promise<() => Promise<void>>;
}

export interface RouteChanges {
  readonly added: readonly RemoteRoute[];
  readonly removed: readonly RemoteRoute[];
}

export const ROUTE_CHECK_INTERVAL_MS = 5_000;
/** The first retry of a route not taken; each one after waits twice as long, up to the check interval. */
const RETRY_FIRST_MS = 100;

export class RoutingCache {
  private routes = new Map<string, RemoteRoute>();
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private unwatch: (() => Promise<void>) | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  /** Refreshes in a row that left a route not taken. */
  private missedStreak = 0;

  constructor(
    private readonly source: RemoteRouteSource,
    private readonly instanceId: string,
    /** Resolves with the ids of the added routes it could not take. */
    private readonly apply: (changes: RouteChanges) => Promise<readonly string[]>,
    private readonly onError: (error: unknown) => void,
    private readonly checkIntervalMs = ROUTE_CHECK_INTERVAL_MS,
  ) {}

  /** Listens for changes, then reads every route once; the periodic check starts too. */
  async start(): Promise<void> {
    this.stopped = false;
    try {
      this.unwatch = await this.source.watch(() => void this.refresh());
    } catch (error) {
      this.onError(error); // the periodic check still finds every change, later
    }
    this.timer = setInterval(() => void this.refresh(), this.checkIntervalMs);
    this.timer.unref();
    await this.refresh();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.retry);
    await this.unwatch?.().catch(() => {});
    await this.running;
  }

  get size(): number {
    return this.routes.size;
  }

  /** Reads the routes again and applies the differences; resolves once what was asked is applied. */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.cycle().finally(() => (this.running = undefined));
    return this.running;
  }

  private async cycle(): Promise<void> {
    do {
      this.again = false;
      if (this.stopped) return;
      try {
        await this.once();
      } catch (error) {
        this.onError(error);
      }
    } while (this.again);
  }

  private async once(): Promise<void> {
    const fresh = new Map<string, RemoteRoute>();
    for (const route of await this.source.tunnelsElsewhere(this.instanceId)) fresh.set(route.tunnelId, route);
    const removed: RemoteRoute[] = [];
    const added: RemoteRoute[] = [];
    for (const [id, old] of this.routes) {
      const now = fresh.get(id);
      if (!now || !sameRoute(old, now)) removed.push(old);
    }
    for (const [id, now] of fresh) {
      const old = this.routes.get(id);
      if (!old || !sameRoute(old, now)) added.push(now);
    }
    this.routes = fresh;
    if (added.length === 0 && removed.length === 0) return;
    const missed = await this.apply({ added, removed });
    for (const id of missed) this.routes.delete(id);
    this.missedStreak = missed.length > 0 ? this.missedStreak + 1 : 0;
    if (missed.length > 0 && !this.stopped) {
      clearTimeout(this.retry);
      this.retry = setTimeout(() => void this.refresh(), Math.min(RETRY_FIRST_MS * 2 ** (this.missedStreak - 1), this.checkIntervalMs));
      this.retry.unref();
    }
  }
}

function sameRoute(a: RemoteRoute, b: RemoteRoute): boolean {
  return a.instanceId === b.instanceId && a.clusterAddr === b.clusterAddr && a.url === b.url && a.version === b.version && a.sessionId === b.sessionId;
}
