// Where every public connection (HTTP request, WebSocket upgrade, TCP, TLS by SNI, a TLS edge's
// backend) finds its tunnels in a cluster: at once, or after a short wait when its agent may be moving between
// instances (CLUSTER.md §3, domain/tunnels/route-waits.ts).
import type { MovingNames } from '../../domain/tunnels/moving-names.js';
import type { RouteWaits } from '../../domain/tunnels/route-waits.js';
import type { EdgeRoute, TunnelChoice } from '../registry.js';
import type { ProxyOpener } from './opener.js';

/**
 * The pool `find` gives. Without `waits` (one instance), or with a usable pool, at once. Else it
 * waits for a usable one when the name's agent may be moving: its pool is there but no tunnel can
 * take the connection, or it has none but `mayMove` says it was withdrawn moments ago (or this
 * instance has just started). A name never routed is answered at once. After the wait, whatever
 * `find` gives then (undefined: 404; an unusable pool: 502). A promise only when it waits.
 */
export function routeOrWait<T extends TunnelChoice>(
  waits: RouteWaits | undefined,
  opener: ProxyOpener,
  find: () => T | undefined,
  mayMove: (moving: MovingNames) => boolean,
): T | undefined | Promise<T | undefined> {
  const pool = find();
  if (!waits || (pool && opener.canOpen(pool))) return pool;
  if (!pool && !mayMove(waits.moving)) return undefined;
  const usable = () => {
    const found = find();
    return found && opener.canOpen(found) ? found : undefined;
  };
  return waits.until(usable).then((found) => found ?? find());
}

/**
 * A TLS edge's connection: at once when its backend has a tunnel that can take it; else, by the
 * same rule, after a wait when a tunnel the backend matched was withdrawn lately (its agent moving).
 * Resolves with whether the backend has a tunnel then (a promise only when it waits).
 */
export function backendOrWait(waits: RouteWaits | undefined, opener: ProxyOpener, edge: EdgeRoute): boolean | Promise<boolean> {
  const backend = edge.backend;
  const found = routeOrWait(waits, opener, () => (backend.candidates.length > 0 ? backend : undefined), (moving) => moving.mayMoveAll(edge.backendNames));
  return found instanceof Promise ? found.then((choice) => choice !== undefined) : found !== undefined;
}
