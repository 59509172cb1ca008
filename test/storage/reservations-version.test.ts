import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { sqlReservationReader } from '../../src/storage/repositories/reservations.js';
import { SqlReservedAddrRepository } from '../../src/storage/repositories/reserved-addrs.js';
import { SqlReservedDomainRepository } from '../../src/storage/repositories/reserved-domains.js';
import { testDatabaseUrl } from '../helpers/app.js';

/** The data plane reloads its reservations only when their version changes: at a reservation made or deleted. */
describe('the reservations version', () => {
  let store: Store;

  before(async () => {
    store = openStore(testDatabaseUrl());
    await migrateToLatest(store);
    await sql`insert into accounts (id, name, created_at) values ('ac_1', 'one', '2026-01-01T00:00:00Z')`.execute(store.db);
  });
  after(() => store.close());

  it('changes when a domain or an address is reserved or deleted, not when one is described anew', async () => {
    const reader = sqlReservationReader(store);
    const domains = new SqlReservedDomainRepository(store);
    const addrs = new SqlReservedAddrRepository(store);
    const common = { accountId: 'ac_1', region: 'local', description: '', metadata: '', createdAt: '2026-01-01T00:00:00Z' };
    const seen = [await reader.version()];
    const changed = async () => {
      const version = await reader.version();
      assert.ok(!seen.includes(version), `${version} was seen before: ${seen.join(', ')}`);
      seen.push(version);
    };
    assert.ok(await domains.insert({ ...common, id: 'rd_1', domain: 'app.example.com', certificatePolicy: null }));
    await changed();
    assert.ok(await addrs.insert({ ...common, id: 'ra_1', port: 20005 }));
    await changed();
    assert.ok(await domains.insert({ ...common, id: 'rd_2', domain: 'b.example.com', certificatePolicy: null }));
    await changed();
    await domains.update('ac_1', 'rd_1', { description: 'renamed' });
    await addrs.update('ac_1', 'ra_1', { metadata: 'm' });
    assert.equal(await reader.version(), seen.at(-1));
    assert.ok(await addrs.delete('ac_1', 'ra_1'));
    await changed();
    assert.ok(await domains.delete('ac_1', 'rd_1'));
    await changed();
  });
});
