import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { isIdOf, newId } from '../ids.js';
import type { PageOf } from '../paging.js';
import { checkDescription, checkMetadata } from '../text-limits.js';
import { checkGroupLabels, labelsMatch } from './labels.js';
import type { TunnelGroupBackend, TunnelGroupBackendChanges, TunnelGroupBackendRepository, TunnelGroupBackendView } from './types.js';

export interface TunnelGroupBackendInput {
  description?: string | undefined;
  metadata?: string | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
}

/** `/backends/tunnel_group` (TUNNELS.md §4), free of HTTP and SQL. */
export class TunnelGroupBackendService {
  constructor(private readonly repository: TunnelGroupBackendRepository) {}

  async create(caller: Principal, input: TunnelGroupBackendInput): Promise<TunnelGroupBackendView> {
    const checked = check(input);
    if (checked.labels === undefined) throw errors.invalidField('labels', 'is required: give 1 to 10 labels, such as {"env":"prod"}');
    const { id, createdAt } = newId('bkdtg');
    const group: TunnelGroupBackend = {
      id,
      accountId: caller.accountId,
      description: checked.description ?? '',
      metadata: checked.metadata ?? '',
      labels: checked.labels,
      createdAt,
    };
    await this.repository.insert(group);
    return (await this.withTunnels(caller.accountId, [group]))[0]!;
  }

  async get(caller: Principal, id: string): Promise<TunnelGroupBackendView> {
    return (await this.withTunnels(caller.accountId, [await this.find(caller.accountId, id)]))[0]!;
  }

  /** Whether the account has this group (edge backend modules must name one). */
  async exists(accountId: string, id: string): Promise<boolean> {
    return isIdOf(id, 'bkdtg') && (await this.repository.get(accountId, id)) !== undefined;
  }

  async list(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<TunnelGroupBackendView>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'bkdtg')) throw errors.invalidBeforeId(beforeId, 'tunnel group backend');
    const page = await this.repository.listPage(caller.accountId, { beforeId, limit });
    return { items: await this.withTunnels(caller.accountId, page.items), hasMore: page.hasMore };
  }

  /** Every field is checked before the group is looked up: a bad body wins over an unknown id. */
  async update(caller: Principal, id: string, input: TunnelGroupBackendInput): Promise<TunnelGroupBackendView> {
    const changes = check(input);
    const updated = isIdOf(id, 'bkdtg') ? await this.repository.update(caller.accountId, id, changes) : undefined;
    if (!updated) throw errors.notFound();
    return (await this.withTunnels(caller.accountId, [updated]))[0]!;
  }

  /**
   * A group that an edge's backend module names is not deleted (409): routing would silently
   * stop, and the edge would show a backend that no longer exists.
   */
  async delete(caller: Principal, id: string): Promise<void> {
    const result = isIdOf(id, 'bkdtg') ? await this.repository.delete(caller.accountId, id) : ({ outcome: 'absent' } as const);
    if (result.outcome === 'absent') throw errors.notFound();
    if (result.outcome === 'in-use') throw errors.tunnelGroupBackendInUse(id, result.edgeIds);
  }

  private async find(accountId: string, id: string): Promise<TunnelGroupBackend> {
    const group = isIdOf(id, 'bkdtg') ? await this.repository.get(accountId, id) : undefined;
    if (!group) throw errors.notFound();
    return group;
  }

  /** The account's labeled tunnels are read once for the whole page. */
  private async withTunnels(accountId: string, groups: readonly TunnelGroupBackend[]): Promise<TunnelGroupBackendView[]> {
    if (groups.length === 0) return [];
    const tunnels = await this.repository.labeledTunnels(accountId);
    return groups.map((group) => ({
      ...group,
      tunnelIds: tunnels.filter((tunnel) => labelsMatch(group.labels, tunnel.labels)).map((tunnel) => tunnel.id),
    }));
  }
}

function check(input: TunnelGroupBackendInput): TunnelGroupBackendChanges {
  const changes: TunnelGroupBackendChanges = {};
  if (input.description !== undefined) changes.description = checkDescription(input.description);
  if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
  if (input.labels !== undefined) changes.labels = checkGroupLabels(input.labels);
  return changes;
}
