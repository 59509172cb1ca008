/**
 * Which unrouted names are worth a route wait (route-waits.ts): only those whose agent may really
 * be moving between instances. A URL withdrawn from this instance's routing table (its last local
 * tunnel gone, or another instance's route removed) is remembered for a while; so is everything
 * during this instance's first moments, whose routing table could not have seen a withdrawal made
 * before it started. A name never routed gets its 404 (or close) at once, so unknown names cannot
 * pin the waiters. The memory is bounded: past its size the oldest withdrawals are forgotten.
 * Labeled tunnels (a TLS edge's backend) have no URL: they are remembered by `labelNames`.
 */

/** How long after a withdrawal (or this instance's start) an unrouted name still waits: ROUTE_WAIT_WINDOW_MS's default. */
export const MOVE_WINDOW_MS = 15_000;
/** Withdrawals remembered at most; beyond, the oldest go (their names answer at once). */
export const MAX_REMEMBERED_WITHDRAWALS = 10_000;

export interface MovingNamesOptions {
  readonly windowMs?: number;
  readonly maxRemembered?: number;
  readonly now?: () => number;
}

export class MovingNames {
  /** URL → when it was withdrawn; Map order is withdrawal order (a URL withdrawn again moves last). */
  private readonly withdrawnAt = new Map<string, number>();
  private readonly windowMs: number;
  private readonly maxRemembered: number;
  private readonly now: () => number;
  private readonly startedAt: number;

  constructor(options: MovingNamesOptions = {}) {
    this.windowMs = options.windowMs ?? MOVE_WINDOW_MS;
    this.maxRemembered = options.maxRemembered ?? MAX_REMEMBERED_WITHDRAWALS;
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
  }

  /** `url` stopped being routed here: its agent may be binding it on another instance. */
  withdrawn(url: string): void {
    const now = this.now();
    this.withdrawnAt.delete(url);
    this.withdrawnAt.set(url, now);
    this.forgetExpired(now);
    if (this.withdrawnAt.size > this.maxRemembered) this.withdrawnAt.delete(this.withdrawnAt.keys().next().value!);
  }

  /** Whether a connection to one of `urls` (none routed now) should wait for its route to appear. */
  mayMove(urls: Iterable<string>): boolean {
    const now = this.now();
    if (now - this.startedAt < this.windowMs) return true;
    this.forgetExpired(now);
    for (const url of urls) if (this.withdrawnAt.has(url)) return true;
    return false;
  }

  /**
   * Whether a TLS edge's connection (no tunnel of its backend live here) should wait: `names`
   * (`labelNames` of the edge's account and backend labels) were all withdrawn lately, as they
   * are when a tunnel the backend matches left. None (no backend): false.
   */
  mayMoveAll(names: readonly string[]): boolean {
    if (names.length === 0) return false;
    const now = this.now();
    if (now - this.startedAt < this.windowMs) return true;
    this.forgetExpired(now);
    return names.every((name) => this.withdrawnAt.has(name));
  }

  get remembered(): number {
    return this.withdrawnAt.size;
  }

  private forgetExpired(now: number): void {
    for (const [url, at] of this.withdrawnAt) {
      if (now - at < this.windowMs) return;
      this.withdrawnAt.delete(url);
    }
  }
}

/**
 * What a labeled tunnel's withdrawal is remembered by, and a TLS edge's backend looked up by: the
 * account, then each label of it. A backend matches every tunnel carrying its labels (a subset of
 * the tunnel's), so all of a backend's names are among those of any tunnel it matched. JSON
 * arrays: no URL begins with `[`.
 */
export function labelNames(accountId: string, labels: Readonly<Record<string, string>>): string[] {
  return [JSON.stringify([accountId]), ...Object.entries(labels).map(([key, value]) => JSON.stringify([accountId, key, value]))];
}

/**
 * `host` and the wildcard names that would serve it, most specific first: for `a.b.example.com`,
 * `*.b.example.com` then `*.example.com` (never `*.com`: a wildcard covers two labels or more).
 */
export function namesServing(host: string): string[] {
  const names = [host];
  for (let dot = host.indexOf('.'); dot !== -1 && host.indexOf('.', dot + 1) !== -1; dot = host.indexOf('.', dot + 1)) names.push(`*${host.slice(dot)}`);
  return names;
}
