import type { Page, PageOf } from '../paging.js';

/** The traffic policy module of a TLS edge: `value` is kept byte for byte as it was sent. */
export interface TrafficPolicyModule {
  readonly enabled: boolean;
  readonly value: string;
}

export interface TlsEdge {
  readonly id: string;
  readonly accountId: string;
  readonly description: string;
  readonly metadata: string;
  readonly hostports: readonly string[];
  readonly trafficPolicy: TrafficPolicyModule | null;
  readonly createdAt: string;
}

export interface TlsEdgeChanges {
  description?: string;
  metadata?: string;
  hostports?: readonly string[];
  trafficPolicy?: TrafficPolicyModule;
}

export interface TlsEdgeRepository {
  insert(edge: TlsEdge): Promise<void>;
  get(accountId: string, id: string): Promise<TlsEdge | undefined>;
  listPage(accountId: string, page: Page): Promise<PageOf<TlsEdge>>;
  /** Applies the changes in one statement and returns the result; undefined when absent. */
  update(accountId: string, id: string, changes: TlsEdgeChanges): Promise<TlsEdge | undefined>;
  /** Replaces (or, with null, removes) the module in one statement; false when the edge is absent. */
  setTrafficPolicy(accountId: string, id: string, module: TrafficPolicyModule | null): Promise<boolean>;
  delete(accountId: string, id: string): Promise<boolean>;
}
