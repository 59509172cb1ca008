import assert from 'node:assert/strict';
import { X509Certificate, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClusterSecretError, refuseStoredClusterCa } from '../../../src/domain/cluster/cluster-ca.js';
import { openStore, type Store } from '../../../src/storage/db.js';
import { migrateToLatest } from '../../../src/storage/migrate.js';
import { SqlClusterCaRepository } from '../../../src/storage/repositories/cluster-ca.js';
import { loadClusterCa, SET_ASIDE_KEY_FILE } from '../../../src/tunnels/tls/cluster-ca.js';
import { agentTlsMaterial } from '../../../src/tunnels/tls/material.js';
import { issuedBy } from '../../../src/tunnels/tls/certificates.js';
import { testDatabaseUrl } from '../../helpers/app.js';

const tempDir = () => join(mkdtempSync(join(tmpdir(), 'burrow-cluster-ca-')), 'tls');

describe('the cluster CA in the database', () => {
  let store: Store;
  let repository: SqlClusterCaRepository;
  const secret = randomBytes(32);

  before(async () => {
    store = openStore(testDatabaseUrl(), { poolSize: 4 });
    await migrateToLatest(store);
    repository = new SqlClusterCaRepository(store);
  });
  after(() => store.close());

  it('without one stored, an instance without CLUSTER_SECRET starts as before', async () => {
    await refuseStoredClusterCa(repository);
  });

  it('instances starting at once end up with one CA; ca.pem holds it in every TLS_DIR, its key nowhere on disk', async () => {
    const dirs = [tempDir(), tempDir(), tempDir(), tempDir()];
    const cas = await Promise.all(dirs.map((tlsDir) => loadClusterCa({ tlsDir, secret, repository })));
    assert.equal(new Set(cas.map((ca) => ca.certPem)).size, 1);
    assert.equal(cas.filter((ca) => ca.created).length, 1, 'exactly one created it');
    for (const dir of dirs) {
      assert.equal(readFileSync(join(dir, 'ca.pem'), 'utf8'), cas[0]!.certPem);
      assert.equal(statSync(join(dir, 'ca.pem')).mode & 0o777, 0o644);
      assert.ok(!existsSync(join(dir, 'ca-key.pem')));
    }
    assert.ok(new X509Certificate(cas[0]!.certPem).ca);
    const row = await repository.read();
    assert.ok(row && !row.sealedKey.includes('PRIVATE KEY'), 'the key is stored sealed');
  });

  it('a later start uses the stored CA, and the agent certificate it issues is from it', async () => {
    const first = await repository.read();
    const tlsDir = tempDir();
    const ca = await loadClusterCa({ tlsDir, secret, repository });
    assert.equal(ca.certPem, first!.certPem);
    assert.equal(ca.created, false);
    const material = await agentTlsMaterial({ tlsDir, ca });
    assert.ok(issuedBy(material.cert, ca));
    assert.equal(material.caPath, join(tlsDir, 'ca.pem'));
  });

  it('a local CA key in TLS_DIR is set aside, not deleted, and not left beside the cluster certificate', async () => {
    const tlsDir = tempDir();
    mkdirSync(tlsDir, { recursive: true });
    writeFileSync(join(tlsDir, 'ca-key.pem'), 'the old key');
    await loadClusterCa({ tlsDir, secret, repository });
    assert.ok(!existsSync(join(tlsDir, 'ca-key.pem')));
    assert.equal(readFileSync(join(tlsDir, SET_ASIDE_KEY_FILE), 'utf8'), 'the old key');
  });

  it('a wrong secret cannot open it: the error names CLUSTER_SECRET and nothing is written', async () => {
    const tlsDir = tempDir();
    await assert.rejects(loadClusterCa({ tlsDir, secret: randomBytes(32), repository }), (error: Error) => error instanceof ClusterSecretError && /CLUSTER_SECRET/.test(error.message));
    assert.ok(!existsSync(join(tlsDir, 'ca.pem')));
  });

  it('an instance without CLUSTER_SECRET is refused once one is stored', async () => {
    await assert.rejects(refuseStoredClusterCa(repository), (error: Error) => error instanceof ClusterSecretError && /CLUSTER_SECRET/.test(error.message));
  });
});
