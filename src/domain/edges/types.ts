import type { Labels } from '../tunnel-group-backends/types.js';
import type { Page, PageOf } from '../paging.js';

/** The traffic policy module of a TLS edge: `value` is kept byte for byte as it was sent. */
export interface TrafficPolicyModule {
  readonly enabled: boolean;
  readonly value: string;
}

/** The backend module of a TLS edge (TUNNELS.md §4): which tunnel group serves its traffic. */
export interface BackendModule {
  readonly enabled: boolean;
  /** A tunnel group (`bkdtg_…`) of the edge's account. */
  readonly backendId: string;
}

/** The TLS versions a `min_version` may name, as the reference spells them. */
export const TLS_VERSIONS = ['1.0', '1.1', '1.2', '1.3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];

/**
 * The tls_termination module of a TLS edge (HTTP-POLICY.md §5): `edge` has burrow terminate TLS
 * and the backend receive plaintext; `upstream` passes TLS through, as without the module.
 */
export interface TlsTerminationModule {
  readonly enabled: boolean;
  readonly terminateAt: 'edge' | 'upstream';
  /** Null: burrow's default (Node's, TLS 1.2). Always null with `upstream`. */
  readonly minVersion: TlsVersion | null;
}

export interface TlsEdge {
  readonly id: string;
  readonly accountId: string;
  readonly description: string;
  readonly metadata: string;
  readonly hostports: readonly string[];
  readonly backend: BackendModule | null;
  readonly trafficPolicy: TrafficPolicyModule | null;
  readonly tlsTermination: TlsTerminationModule | null;
  readonly createdAt: string;
}

export interface TlsEdgeChanges {
  description?: string;
  metadata?: string;
  hostports?: readonly string[];
  backend?: BackendModule;
  trafficPolicy?: TrafficPolicyModule;
  tlsTermination?: TlsTerminationModule;
}

/**
 * What a write naming a tunnel group answers when the group was deleted between the service's
 * check and the write (the foreign key refused it).
 */
export type BackendMissing = 'backend-missing';

export interface TlsEdgeRepository {
  insert(edge: TlsEdge): Promise<'inserted' | BackendMissing>;
  get(accountId: string, id: string): Promise<TlsEdge | undefined>;
  listPage(accountId: string, page: Page): Promise<PageOf<TlsEdge>>;
  /** Applies the changes in one statement and returns the result; undefined when absent. */
  update(accountId: string, id: string, changes: TlsEdgeChanges): Promise<TlsEdge | undefined | BackendMissing>;
  /** Replaces (or, with null, removes) the module in one statement; false when the edge is absent. */
  setTrafficPolicy(accountId: string, id: string, module: TrafficPolicyModule | null): Promise<boolean>;
  /** Replaces (or, with null, removes) the backend module; false when the edge is absent. */
  setBackend(accountId: string, id: string, module: BackendModule | null): Promise<boolean | BackendMissing>;
  /** Replaces (or, with null, removes) the tls_termination module; false when the edge is absent. */
  setTlsTermination(accountId: string, id: string, module: TlsTerminationModule | null): Promise<boolean>;
  delete(accountId: string, id: string): Promise<boolean>;
}

/**
 * What the data plane needs to route a connection that reached an edge hostport (TUNNELS.md §4):
 * the edge, its backend module with the group's labels (null without a module), and its traffic
 * policy module (null without one). Read across accounts, since routing is by SNI.
 */
export interface EdgeRoute {
  readonly edgeId: string;
  readonly accountId: string;
  /** The hostport of the edge whose host matched (as the edge lists it). */
  readonly hostport: string;
  readonly backend: { readonly enabled: boolean; readonly groupId: string; readonly labels: Labels } | null;
  readonly policy: TrafficPolicyModule | null;
  readonly tlsTermination: TlsTerminationModule | null;
}

export interface EdgeRouteReader {
  /**
   * The edge serving `host` (an SNI name: compared case-insensitively with the host of each
   * hostport, whatever its port), or undefined. Hostports are not unique across edges: when
   * several edges list the host, the oldest edge wins, so a later edge cannot take over a
   * hostname another edge already serves.
   */
  findEdgeByHost(host: string): Promise<EdgeRoute | undefined>;
}
