import type { ReservationReader } from '../../domain/reservations/bind-check.js';
import type { Store } from '../types.js';
import { SqlReservedAddrRepository } from './reserved-addrs.js';
import { SqlReservedDomainRepository } from './reserved-domains.js';

/** What the data plane reads of both reservation tables. */
export function sqlReservationReader(store: Store): ReservationReader {
  const domains = new SqlReservedDomainRepository(store);
  const addrs = new SqlReservedAddrRepository(store);
  return {
    matching: (names, under) => domains.matching(names, under),
    owners: (ports) => addrs.owners(ports),
    reservedPorts: () => addrs.reservedPorts(),
    version: async () => `${await domains.version()}/${await addrs.version()}`,
  };
}
