import type { Page, PageOf } from '../paging.js';

/** A label selector or a tunnel's labels: key → value (SPEC §5.3 `key`/`value`), keys sorted. */
export type Labels = Readonly<Record<string, string>>;

/** A tunnel group backend (TUNNELS.md §4): the live labeled tunnels that carry all its labels. */
export interface TunnelGroupBackend {
  readonly id: string;
  readonly accountId: string;
  readonly description: string;
  readonly metadata: string;
  readonly labels: Labels;
  readonly createdAt: string;
}

/** A group as the API shows it: with the ids of the tunnels it matches now, oldest first. */
export interface TunnelGroupBackendView extends TunnelGroupBackend {
  readonly tunnelIds: readonly string[];
}

export interface TunnelGroupBackendChanges {
  description?: string;
  metadata?: string;
  labels?: Labels;
}

/** A live labeled tunnel, as far as group matching needs it. */
export interface LabeledTunnel {
  readonly id: string;
  readonly labels: Labels;
}

/** `deleted`; `absent` (no such group in the account); or the edges whose backend names it. */
export type TunnelGroupBackendDeletion = { outcome: 'deleted' } | { outcome: 'absent' } | { outcome: 'in-use'; edgeIds: readonly string[] };

export interface TunnelGroupBackendRepository {
  insert(group: TunnelGroupBackend): Promise<void>;
  get(accountId: string, id: string): Promise<TunnelGroupBackend | undefined>;
  listPage(accountId: string, page: Page): Promise<PageOf<TunnelGroupBackend>>;
  /** Applies the changes in one statement and returns the result; undefined when absent. */
  update(accountId: string, id: string, changes: TunnelGroupBackendChanges): Promise<TunnelGroupBackend | undefined>;
  /** Deletes the group unless an edge's backend module names it. */
  delete(accountId: string, id: string): Promise<TunnelGroupBackendDeletion>;
  /** Every live labeled tunnel of the account (every instance's), oldest first. */
  labeledTunnels(accountId: string): Promise<LabeledTunnel[]>;
  /** Every group of the account as a selector (id and labels), oldest first. */
  selectors(accountId: string): Promise<LabeledTunnel[]>;
}
