// Where every public connection (HTTP request, WebSocket upgrade, TCP, TLS by SNI) finds its
// endpoint in a cluster: at once, or after a short wait when its agent may be moving between
// instances (CLUSTER.md §3, domain/tunnels/route-waits.ts).
import type { RouteWaits } from '../../domain/tunnels/route-waits.js';
import type { EndpointPool } from '../registry.js';
import type { ProxyOpener } from './opener.js';

/**
 * The pool `find` gives. Without `waits` (one instance), or with a usable pool, at once. Else it
 * waits for a usable one when the name's agent may be moving: its pool is there but no tunnel can
 * take the connection, or it has none but one of `urls` was withdrawn moments ago (or this
 * instance has just started). A name never routed is answered at once. After the wait, whatever
 * `find` gives then (undefined: 404; an unusable pool: 502). A promise only when it waits.
 */
export function routeOrWait(
  waits: RouteWaits | undefined,
  opener: ProxyOpener,
  find: () => EndpointPool | undefined,
  urls: () => Iterable<string>,
): EndpointPool | undefined | Promise<EndpointPool | undefined> {
  const pool = find();
  if (!waits || (pool && opener.canOpen(pool))) return pool;
  if (!pool && !waits.moving.mayMove(urls())) return undefined;
  const usable = () => {
    const found = find();
    return found && opener.canOpen(found) ? found : undefined;
  };
  return waits.until(usable).then((found) => found ?? find());
}
