import type { Page, PageOf } from '../paging.js';
import type { Labels } from '../tunnel-group-backends/types.js';
import type { Endpoint, SessionCommand, Tunnel, TunnelSession } from '../tunnels/types.js';

/** A tunnel as the API shows it: with the region of its session. */
export interface ListedTunnel extends Tunnel {
  readonly region: string;
}

/**
 * An endpoint as the API shows it: with the region of its session and the tunnel that serves
 * it (the oldest one of a pool), whose metadata and forwarding address the endpoint shows too.
 */
export interface ListedEndpoint extends Endpoint {
  readonly region: string;
  readonly tunnelId: string | null;
  readonly metadata: string;
  readonly forwardsTo: string;
}

/** What the REST API reads; the data plane writes through `IngressRepository` and `DataPlaneRepository` (domain/tunnels/). */
export interface LiveObjectReader {
  getSession(accountId: string, id: string): Promise<TunnelSession | undefined>;
  listSessions(accountId: string, page: Page): Promise<PageOf<TunnelSession>>;
  getTunnel(accountId: string, id: string): Promise<ListedTunnel | undefined>;
  listTunnels(accountId: string, page: Page): Promise<PageOf<ListedTunnel>>;
  getEndpoint(accountId: string, id: string): Promise<ListedEndpoint | undefined>;
  listEndpoints(accountId: string, page: Page): Promise<PageOf<ListedEndpoint>>;
}

/** Delivers a command to whichever instance holds the session (app/ wires it). */
export interface SessionControl {
  send(session: TunnelSession, command: SessionCommand): Promise<void>;
}

/** The tunnel groups of an account, as selectors (TUNNELS.md §4: a group matches by labels). */
export interface GroupSelectors {
  selectors(accountId: string): Promise<readonly { id: string; labels: Labels }[]>;
}

/** A tunnel as listed: with the tunnel groups a labeled tunnel serves. */
export interface TunnelView extends ListedTunnel {
  readonly backendIds: readonly string[];
}
