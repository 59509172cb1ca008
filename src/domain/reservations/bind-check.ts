import type { AgentRefusal } from '../tunnels/agent-errors.js';
import { addressReservationRefusal, hostnameReservationRefusal, reservationQuery, type BindReservationSettings, type ReservableTarget } from './bind-rule.js';
import type { NameReservation } from './types.js';

/** What the data plane reads of reservations (implemented in storage/). */
export interface ReservationReader {
  /** Reservations of any account whose domain is one of `domains`, or ends in `.${under}`. */
  matching(domains: readonly string[], under: string | undefined): Promise<NameReservation[]>;
  /** The account holding each of `ports` that is reserved. */
  owners(ports: readonly number[]): Promise<ReadonlyMap<number, string>>;
  /** Every reserved port: random TCP binds never take one. */
  reservedPorts(): Promise<ReadonlySet<number>>;
  /** Changes whenever a reservation is made or deleted (names and ports never change in place). */
  version(): Promise<string>;
}

/** The bind rule of CERTIFICATES.md §0 over the stored reservations, for one bind or many live tunnels. */
export class BindReservations {
  constructor(
    private readonly reader: ReservationReader,
    readonly settings: BindReservationSettings,
  ) {}

  async refusal(target: ReservableTarget, accountId: string): Promise<AgentRefusal | null> {
    if (target.kind === 'tcp') {
      const owners = await this.reader.owners([target.port]);
      return addressReservationRefusal(target.port, accountId, owners.get(target.port), this.settings);
    }
    const query = reservationQuery(target.hostname);
    return hostnameReservationRefusal(target.hostname, accountId, await this.reader.matching(query.domains, query.under), this.settings);
  }

  /** The rule for every held target at once (few queries, whatever their number); index-aligned. */
  async refusals(held: readonly { target: ReservableTarget; accountId: string }[]): Promise<(AgentRefusal | null)[]> {
    const ports = held.flatMap(({ target }) => (target.kind === 'tcp' ? [target.port] : []));
    const owners = ports.length > 0 ? await this.reader.owners([...new Set(ports)]) : new Map<number, string>();
    const names = new Set<string>();
    for (const { target } of held) if (target.kind === 'hostname') for (const name of reservationQuery(target.hostname).domains) names.add(name);
    const found = names.size > 0 ? await this.reader.matching([...names], undefined) : [];
    const results: (AgentRefusal | null)[] = [];
    for (const { target, accountId } of held) {
      if (target.kind === 'tcp') {
        results.push(addressReservationRefusal(target.port, accountId, owners.get(target.port), this.settings));
        continue;
      }
      const under = reservationQuery(target.hostname).under;
      // a wildcard endpoint (rare) also needs the names under it
      const reservations = under === undefined ? found : [...found, ...(await this.reader.matching([], under))];
      results.push(hostnameReservationRefusal(target.hostname, accountId, reservations, this.settings));
    }
    return results;
  }

  reservedPorts(): Promise<ReadonlySet<number>> {
    return this.reader.reservedPorts();
  }

  owners(ports: readonly number[]): Promise<ReadonlyMap<number, string>> {
    return this.reader.owners(ports);
  }

  version(): Promise<string> {
    return this.reader.version();
  }
}
