import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { isIdOf, newId } from '../ids.js';
import type { PageOf } from '../paging.js';
import { randomBytes } from '../random.js';
import { checkDescription, checkMetadata } from '../text-limits.js';
import { nthPort, portCount } from '../tunnels/ports.js';
import { checkRegion, type ReservationSettings } from './settings.js';
import type { ReservedAddr, ReservedAddrChanges, ReservedAddrRepository } from './types.js';

export interface ReservedAddrInput {
  region?: string | undefined;
  description?: string | undefined;
  metadata?: string | undefined;
}

/** A reserved address as the API shows it: `host:port` on EDGE_PUBLIC_HOST. */
export interface ReservedAddrView extends ReservedAddr {
  readonly addr: string;
}

/** Inserts that lose a race for a port to another create before the answer is 409. */
const INSERT_ATTEMPTS = 16;

/** `/reserved_addrs` (CERTIFICATES.md §0), free of HTTP and SQL. */
export class ReservedAddrService {
  constructor(
    private readonly repository: ReservedAddrRepository,
    private readonly settings: ReservationSettings,
  ) {}

  /** The reference's create names no address: a free port of EDGE_TCP_PORTS is given. */
  async create(caller: Principal, input: ReservedAddrInput): Promise<ReservedAddrView> {
    const region = checkRegion(input.region, this.settings);
    const description = checkDescription(input.description ?? '');
    const metadata = checkMetadata(input.metadata ?? '');
    const ports = this.settings.tcpPorts;
    const total = portCount(ports);
    if (total === 0) throw errors.noFreeAddress('this server serves no TCP addresses (EDGE_TCP_PORTS is empty).');
    // a port any tunnel holds (the caller's own too: its bind would then be 334) is not free
    const unavailable = await this.repository.unavailablePorts();
    // from a random offset, so that reserved ports do not pile up at the start of the range
    const start = randomBytes(4).readUInt32BE(0) % total;
    for (let step = 0, attempts = 0; step < total && attempts < INSERT_ATTEMPTS; step++) {
      const port = nthPort(ports, (start + step) % total);
      if (unavailable.has(port)) continue;
      attempts++;
      const { id, createdAt } = newId('ra');
      const reserved: ReservedAddr = { id, accountId: caller.accountId, port, region, description, metadata, createdAt };
      if (await this.repository.insert(reserved)) return this.view(reserved);
    }
    throw errors.noFreeAddress('every port of EDGE_TCP_PORTS is reserved or in use. Delete a reserved address, or ask the operator for more ports.');
  }

  async get(caller: Principal, id: string): Promise<ReservedAddrView> {
    const found = isIdOf(id, 'ra') ? await this.repository.get(caller.accountId, id) : undefined;
    if (!found) throw errors.notFound();
    return this.view(found);
  }

  async list(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<ReservedAddrView>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'ra')) throw errors.invalidBeforeId(beforeId, 'reserved address');
    const page = await this.repository.listPage(caller.accountId, { beforeId, limit });
    return { items: page.items.map((item) => this.view(item)), hasMore: page.hasMore };
  }

  async update(caller: Principal, id: string, input: Omit<ReservedAddrInput, 'region'>): Promise<ReservedAddrView> {
    const changes: ReservedAddrChanges = {};
    if (input.description !== undefined) changes.description = checkDescription(input.description);
    if (input.metadata !== undefined) changes.metadata = checkMetadata(input.metadata);
    const updated = isIdOf(id, 'ra') ? await this.repository.update(caller.accountId, id, changes) : undefined;
    if (!updated) throw errors.notFound();
    return this.view(updated);
  }

  /** A tunnel bound on the address is stopped by the data plane within a second (reservation watch). */
  async delete(caller: Principal, id: string): Promise<void> {
    const deleted = isIdOf(id, 'ra') && (await this.repository.delete(caller.accountId, id));
    if (!deleted) throw errors.notFound();
  }

  private view(reserved: ReservedAddr): ReservedAddrView {
    return { ...reserved, addr: `${this.settings.publicHost}:${reserved.port}` };
  }
}
