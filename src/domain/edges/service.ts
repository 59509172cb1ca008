import type { Principal } from '../accounts/types.js';
import { hostportProblem } from '../acl.js';
import type { PageOf } from '../paging.js';
import { errors, quote } from '../errors.js';
import { isIdOf, newId } from '../ids.js';
import { validatePolicy } from '../policy/index.js';
import { checkDescription, checkMetadata } from '../text-limits.js';
import type { TlsEdge, TlsEdgeChanges, TlsEdgeRepository, TrafficPolicyModule } from './types.js';

export const HOSTPORTS_MAX = 10;

export interface TrafficPolicyInput {
  enabled?: boolean | undefined;
  value: string;
}

export interface TlsEdgeInput {
  description?: string | undefined;
  metadata?: string | undefined;
  hostports?: readonly string[] | undefined;
  trafficPolicy?: TrafficPolicyInput | undefined;
}

/** SPEC §7: TLS edges and their traffic policy module, free of HTTP and SQL. */
export class TlsEdgeService {
  constructor(
    private readonly repository: TlsEdgeRepository,
    private readonly maxPolicyRules: number,
  ) {}

  async create(caller: Principal, input: TlsEdgeInput): Promise<TlsEdge> {
    const checked = this.check(input);
    const { id, createdAt } = newId('edgtls');
    const edge: TlsEdge = {
      id,
      accountId: caller.accountId,
      description: checked.description ?? '',
      metadata: checked.metadata ?? '',
      hostports: checked.hostports ?? [],
      trafficPolicy: checked.trafficPolicy ?? null,
      createdAt,
    };
    await this.repository.insert(edge);
    return edge;
  }

  async get(caller: Principal, id: string): Promise<TlsEdge> {
    const edge = isIdOf(id, 'edgtls') ? await this.repository.get(caller.accountId, id) : undefined;
    if (!edge) throw errors.notFound();
    return edge;
  }

  list(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<TlsEdge>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'edgtls')) throw errors.invalidBeforeId(beforeId, 'TLS edge');
    return this.repository.listPage(caller.accountId, { beforeId, limit });
  }

  /** Every field is checked before the edge is looked up: a bad body wins over an unknown id. */
  async update(caller: Principal, id: string, input: TlsEdgeInput): Promise<TlsEdge> {
    const changes = this.check(input);
    const updated = isIdOf(id, 'edgtls') ? await this.repository.update(caller.accountId, id, changes) : undefined;
    if (!updated) throw errors.notFound();
    return updated;
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const deleted = isIdOf(id, 'edgtls') && (await this.repository.delete(caller.accountId, id));
    if (!deleted) throw errors.notFound();
  }

  /** PUT: validates the whole module first, so a rejected one never replaces the stored one. */
  async replaceTrafficPolicy(caller: Principal, id: string, input: TrafficPolicyInput, field = 'value'): Promise<TrafficPolicyModule> {
    const module = this.checkModule(input, field);
    const found = isIdOf(id, 'edgtls') && (await this.repository.setTrafficPolicy(caller.accountId, id, module));
    if (!found) throw errors.notFound();
    return module;
  }

  async getTrafficPolicy(caller: Principal, id: string): Promise<TrafficPolicyModule> {
    const module = (await this.get(caller, id)).trafficPolicy;
    if (!module) throw errors.notFound();
    return module;
  }

  /** Deleting a module that is not there succeeds (SPEC §7.2); an unknown edge does not. */
  async deleteTrafficPolicy(caller: Principal, id: string): Promise<void> {
    const found = isIdOf(id, 'edgtls') && (await this.repository.setTrafficPolicy(caller.accountId, id, null));
    if (!found) throw errors.notFound();
  }

  private check(input: TlsEdgeInput): TlsEdgeChanges {
    const changes: TlsEdgeChanges = {};
    if (input.description !== undefined) changes.description = checkDescription(input.description);
    if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
    if (input.hostports !== undefined) changes.hostports = checkHostports(input.hostports);
    if (input.trafficPolicy !== undefined) changes.trafficPolicy = this.checkModule(input.trafficPolicy, 'traffic_policy.value');
    return changes;
  }

  /** `field` names where the document was in the request, for the error's `param`. */
  private checkModule(input: TrafficPolicyInput, field: string): TrafficPolicyModule {
    const result = validatePolicy(input.value, { maxRules: this.maxPolicyRules });
    if (!result.ok) throw errors.policy(result.error.code, result.error.message, field);
    return { enabled: input.enabled ?? true, value: input.value };
  }
}

function checkHostports(hostports: readonly string[]): readonly string[] {
  if (hostports.length > HOSTPORTS_MAX) {
    throw errors.invalidField('hostports', `may hold at most ${HOSTPORTS_MAX} entries, but ${hostports.length} were given`);
  }
  hostports.forEach((hostport, index) => {
    const problem = hostportProblem(hostport);
    if (problem) throw errors.invalidField('hostports', `entry ${index + 1}, ${quote(hostport)}, is not a valid host:port. ${problem}`);
  });
  return [...hostports];
}
