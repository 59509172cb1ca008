import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ClusterSecretError, loadOrCreateClusterCa } from '../../src/domain/cluster/cluster-ca.js';
import { openStore, type Store } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { SqlClusterCaRepository } from '../../src/storage/repositories/cluster-ca.js';
import { testDatabaseUrl } from '../helpers/app.js';
import { LEGACY_SEALED } from '../helpers/legacy-sealed.js';

/**
 * A database whose cluster CA was stored before sealing.ts served every sealed value (its key in
 * the former `v1:` format) still opens: the instances of a cluster keep their CA.
 */
describe('sealed rows written before the sealing formats were unified', () => {
  let store: Store;

  before(async () => {
    store = openStore(testDatabaseUrl());
    await migrateToLatest(store);
    await sql`insert into cluster_ca (id, cert_pem, sealed_key, created_at) values (1, 'the certificate', ${LEGACY_SEALED.sealed}, '2026-01-01T00:00:00Z')`.execute(store.db);
  });
  after(() => store.close());

  it('the cluster CA stored in the former format opens with its CLUSTER_SECRET, and is not replaced', async () => {
    const repository = new SqlClusterCaRepository(store);
    const create = () => Promise.reject(new Error('a stored CA must not be created again'));
    const ca = await loadOrCreateClusterCa(repository, LEGACY_SEALED.key, create);
    assert.deepEqual(ca, { certPem: 'the certificate', keyPem: LEGACY_SEALED.plaintext, created: false });
    assert.equal((await repository.read())?.sealedKey, LEGACY_SEALED.sealed, 'the row is left as it was');
  });

  it('another CLUSTER_SECRET still cannot open it, and says so', async () => {
    const other = Buffer.alloc(32, 8);
    await assert.rejects(loadOrCreateClusterCa(new SqlClusterCaRepository(store), other, () => Promise.reject(new Error('unused'))), ClusterSecretError);
  });
});
