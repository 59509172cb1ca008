import type { Principal } from '../accounts/types.js';
import { hostportProblem } from '../acl.js';
import type { PageOf } from '../paging.js';
import { errors, quote } from '../errors.js';
import { isIdOf, newId } from '../ids.js';
import { validatePolicy } from '../policy/index.js';
import { checkDescription, checkMetadata } from '../text-limits.js';
import { hostnameReservationRefusal, reservationQuery } from '../reservations/bind-rule.js';
import type { NameReservation } from '../reservations/types.js';
import { TLS_VERSIONS, type BackendModule, type TlsEdge, type TlsEdgeChanges, type TlsEdgeRepository, type TlsTerminationModule, type TlsVersion, type TrafficPolicyModule } from './types.js';

export const HOSTPORTS_MAX = 10;

// Edges only honour other accounts' reservations; REQUIRE_RESERVED_NAMES is the agents' rule.
const NO_REQUIREMENT = { requireReservedNames: false, edgeDomain: '', publicHost: '', region: '' };

export interface TrafficPolicyInput {
  enabled?: boolean | undefined;
  value: string;
}

export interface BackendInput {
  enabled?: boolean | undefined;
  backendId: string;
}

export interface TlsTerminationInput {
  enabled?: boolean | undefined;
  terminateAt?: string | undefined;
  minVersion?: string | undefined;
}

export interface TlsEdgeInput {
  description?: string | undefined;
  metadata?: string | undefined;
  hostports?: readonly string[] | undefined;
  backend?: BackendInput | undefined;
  trafficPolicy?: TrafficPolicyInput | undefined;
  tlsTermination?: TlsTerminationInput | undefined;
}

/** Which tunnel groups exist (TunnelGroupBackendService): a backend module must name one of the account. */
export interface TunnelGroupBackendDirectory {
  exists(accountId: string, id: string): Promise<boolean>;
}

/** The reserved domains that may cover a name (ReservationReader's `matching`). */
export interface HostportReservations {
  matching(domains: readonly string[], under: string | undefined): Promise<NameReservation[]>;
}

/** SPEC §7: TLS edges and their traffic policy and backend modules, free of HTTP and SQL. */
export class TlsEdgeService {
  constructor(
    private readonly repository: TlsEdgeRepository,
    private readonly maxPolicyRules: number,
    private readonly groups: TunnelGroupBackendDirectory,
    /** Without it every hostport name is first-come. */
    private readonly reservations?: HostportReservations,
    /** Told of new hostports, so that their certificates are ordered at once (CERTIFICATES.md §1: "when created"). */
    private readonly certificateNamesChanged: () => void = () => {},
  ) {}

  async create(caller: Principal, input: TlsEdgeInput): Promise<TlsEdge> {
    const checked = await this.check(caller.accountId, input);
    const { id, createdAt } = newId('edgtls');
    const edge: TlsEdge = {
      id,
      accountId: caller.accountId,
      description: checked.description ?? '',
      metadata: checked.metadata ?? '',
      hostports: checked.hostports ?? [],
      backend: checked.backend ?? null,
      trafficPolicy: checked.trafficPolicy ?? null,
      tlsTermination: checked.tlsTermination ?? null,
      createdAt,
    };
    if ((await this.repository.insert(edge)) === 'backend-missing') throw noSuchGroup(BACKEND_IN_EDGE, edge.backend!.backendId);
    if (edge.hostports.length > 0) this.certificateNamesChanged();
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
    const changes = await this.check(caller.accountId, input);
    const updated = isIdOf(id, 'edgtls') ? await this.repository.update(caller.accountId, id, changes) : undefined;
    if (updated === 'backend-missing') throw noSuchGroup(BACKEND_IN_EDGE, changes.backend!.backendId);
    if (!updated) throw errors.notFound();
    if (changes.hostports && changes.hostports.length > 0) this.certificateNamesChanged();
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

  /**
   * PUT of the backend module: the group is checked first (a bad body wins over an unknown
   * edge); `field` names where `backend_id` was in the request, for the error's `param`.
   */
  async replaceBackend(caller: Principal, id: string, input: BackendInput, field = 'backend_id'): Promise<BackendModule> {
    const module = await this.checkBackend(caller.accountId, input, field);
    const found = isIdOf(id, 'edgtls') && (await this.repository.setBackend(caller.accountId, id, module));
    if (found === 'backend-missing') throw noSuchGroup(field, module.backendId);
    if (!found) throw errors.notFound();
    return module;
  }

  async getBackend(caller: Principal, id: string): Promise<BackendModule> {
    const module = (await this.get(caller, id)).backend;
    if (!module) throw errors.notFound();
    return module;
  }

  /** Deleting a module that is not there succeeds, as for the traffic policy module. */
  async deleteBackend(caller: Principal, id: string): Promise<void> {
    const found = isIdOf(id, 'edgtls') && (await this.repository.setBackend(caller.accountId, id, null));
    if (!found) throw errors.notFound();
  }

  /** PUT of the tls_termination module; `prefix` is where its fields were in the request. */
  async replaceTlsTermination(caller: Principal, id: string, input: TlsTerminationInput, prefix = ''): Promise<TlsTerminationModule> {
    const module = checkTermination(input, prefix);
    const found = isIdOf(id, 'edgtls') && (await this.repository.setTlsTermination(caller.accountId, id, module));
    if (!found) throw errors.notFound();
    return module;
  }

  async getTlsTermination(caller: Principal, id: string): Promise<TlsTerminationModule> {
    const module = (await this.get(caller, id)).tlsTermination;
    if (!module) throw errors.notFound();
    return module;
  }

  /** Deleting a module that is not there succeeds, as for the other modules. */
  async deleteTlsTermination(caller: Principal, id: string): Promise<void> {
    const found = isIdOf(id, 'edgtls') && (await this.repository.setTlsTermination(caller.accountId, id, null));
    if (!found) throw errors.notFound();
  }

  private async check(accountId: string, input: TlsEdgeInput): Promise<TlsEdgeChanges> {
    const changes: TlsEdgeChanges = {};
    if (input.description !== undefined) changes.description = checkDescription(input.description);
    if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
    if (input.hostports !== undefined) {
      changes.hostports = checkHostports(input.hostports);
      await this.refuseReservedElsewhere(accountId, changes.hostports);
    }
    if (input.trafficPolicy !== undefined) changes.trafficPolicy = this.checkModule(input.trafficPolicy, 'traffic_policy.value');
    if (input.tlsTermination !== undefined) changes.tlsTermination = checkTermination(input.tlsTermination, 'tls_termination.');
    if (input.backend !== undefined) changes.backend = await this.checkBackend(accountId, input.backend, BACKEND_IN_EDGE);
    return changes;
  }

  /**
   * CERTIFICATES.md §0: a hostport whose name another account reserved (or covers with a
   * wildcard) is refused, by the bind rule agents get; IP hostports are never reserved.
   */
  private async refuseReservedElsewhere(accountId: string, hostports: readonly string[]): Promise<void> {
    if (!this.reservations) return;
    for (const hostport of hostports) {
      const host = hostport.slice(0, hostport.lastIndexOf(':')).toLowerCase();
      if (host.startsWith('[') || /^[0-9.]+$/.test(host)) continue;
      const query = reservationQuery(host);
      const found = await this.reservations.matching(query.domains, query.under);
      const refusal = hostnameReservationRefusal(host, accountId, found, NO_REQUIREMENT);
      if (refusal) throw errors.hostportReservedElsewhere(hostport);
    }
  }

  private async checkBackend(accountId: string, input: BackendInput, field: string): Promise<BackendModule> {
    if (!(await this.groups.exists(accountId, input.backendId))) throw noSuchGroup(field, input.backendId);
    return { enabled: input.enabled ?? true, backendId: input.backendId };
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

/**
 * The reference's rules (its API docs for EndpointTLSTermination): `terminate_at` is `edge` or
 * `upstream` (burrow's default when absent: passthrough, as without the module), and
 * `min_version` must be null with `upstream`, since nothing is terminated there.
 */
function checkTermination(input: TlsTerminationInput, prefix: string): TlsTerminationModule {
  const terminateAt = input.terminateAt ?? 'upstream';
  if (terminateAt !== 'edge' && terminateAt !== 'upstream') {
    throw errors.invalidField(`${prefix}terminate_at`, `must be "edge" or "upstream", and ${quote(terminateAt)} is neither`);
  }
  const minVersion = input.minVersion;
  if (minVersion !== undefined && !(TLS_VERSIONS as readonly string[]).includes(minVersion)) {
    throw errors.invalidField(`${prefix}min_version`, `must be one of ${TLS_VERSIONS.map((v) => `"${v}"`).join(', ')}, and ${quote(minVersion)} is none`);
  }
  if (minVersion !== undefined && terminateAt === 'upstream') {
    throw errors.invalidField(`${prefix}min_version`, 'must be null when terminate_at is "upstream": TLS is not terminated at the edge');
  }
  return { enabled: input.enabled ?? true, terminateAt, minVersion: (minVersion as TlsVersion | undefined) ?? null };
}

const BACKEND_IN_EDGE = 'backend.backend_id';

function noSuchGroup(field: string, backendId: string): Error {
  return errors.invalidField(field, `must name a tunnel group of this account (a "bkdtg_" id), and ${quote(backendId)} is none`);
}
