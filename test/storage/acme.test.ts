import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SqlAcmeRepository } from '../../src/storage/repositories/acme.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** The ACME rows every instance shares (migration 012), on SQLite or TEST_DATABASE_URL's PostgreSQL. */
describe('SqlAcmeRepository', () => {
  let app: TestApp;
  let repository: SqlAcmeRepository;
  before(async () => {
    app = await createTestApp();
    repository = new SqlAcmeRepository(app.store);
  });
  after(() => app.close());

  it("lists the names managed whatever is bound: reservations with a policy (their key type) and live TLS edges' hostport names", async () => {
    const reserve = (body: unknown) => app.call({ method: 'POST', url: '/reserved_domains', body });
    assert.equal((await reserve({ domain: 'rsa.managed.example', certificate_management_policy: { authority: 'letsencrypt' } })).statusCode, 201);
    assert.equal((await reserve({ domain: 'ec.managed.example', certificate_management_policy: { private_key_type: 'ecdsa' } })).statusCode, 201);
    assert.equal((await reserve({ domain: '*.wild.managed.example', certificate_management_policy: { private_key_type: 'ecdsa' } })).statusCode, 201);
    assert.equal((await reserve({ domain: 'plain.managed.example' })).statusCode, 201);
    // an edge naming a reserved name too: the reservation's key type wins; an address is no name to order
    const edge = await app.call({ method: 'POST', url: '/edges/tls', body: { hostports: ['Edge.Managed.example:443', 'ec.managed.example:443', '10.0.0.1:443'] } });
    assert.equal(edge.statusCode, 201, edge.body);
    const managed = (await repository.managedNames()).filter((each) => each.name.endsWith('managed.example') || each.name === '10.0.0.1');
    assert.deepEqual(managed, [
      { name: '*.wild.managed.example', keyType: 'ecdsa' },
      { name: 'ec.managed.example', keyType: 'ecdsa' },
      { name: 'edge.managed.example' },
      { name: 'rsa.managed.example', keyType: 'rsa' },
    ]);
    assert.equal(await repository.policyKeyType('rsa.managed.example'), 'rsa');
    assert.equal(await repository.policyKeyType('*.wild.managed.example'), 'ecdsa');
    assert.equal(await repository.policyKeyType('plain.managed.example'), undefined);
    assert.equal(await repository.policyKeyType('edge.managed.example'), undefined);
  });

  it('keeps the first account stored for a directory', async () => {
    const first = await repository.saveAccount({ directoryUrl: 'https://ca.example/dir', keySealed: 'v1.a', accountUrl: null });
    const second = await repository.saveAccount({ directoryUrl: 'https://ca.example/dir', keySealed: 'v1.b', accountUrl: null });
    assert.equal(first.keySealed, 'v1.a');
    assert.equal(second.keySealed, 'v1.a');
    assert.equal(await repository.account('https://other.example/dir'), undefined);
  });

  it('lets one instance order a name at a time, until its lease runs out', async () => {
    assert.equal(await repository.claimOrder('a.example.com', 'inst_1', 1000, 5000), true);
    assert.equal(await repository.claimOrder('a.example.com', 'inst_2', 2000, 6000), false);
    assert.equal(await repository.claimOrder('a.example.com', 'inst_1', 2000, 6000), true, 'the holder renews its own lease');
    assert.equal(await repository.claimOrder('a.example.com', 'inst_2', 7000, 9000), true, 'a lapsed lease is taken');
    // only the holder records the outcome
    await repository.finishOrder('a.example.com', 'inst_1', { ok: true, certPem: 'stale', keySealed: 'k', notAfter: 1, orderAt: 1 });
    assert.equal((await repository.certificate('a.example.com'))?.certPem, null);
    await repository.finishOrder('a.example.com', 'inst_2', { ok: true, certPem: 'CERT', keySealed: 'v1.key', notAfter: 90_000, orderAt: 60_000 });
    assert.deepEqual(await repository.certificate('a.example.com'), {
      name: 'a.example.com',
      certPem: 'CERT',
      keySealed: 'v1.key',
      notAfter: 90_000,
      orderAt: 60_000,
      failures: 0,
      lastError: null,
    });
    assert.equal(await repository.claimOrder('a.example.com', 'inst_1', 8000, 9000), true, 'finishing frees the claim');
  });

  it('records a failure with its retry time and keeps the certificate', async () => {
    await repository.finishOrder('a.example.com', 'inst_1', { ok: false, error: 'rateLimited', failures: 2, orderAt: 120_000 });
    const row = await repository.certificate('a.example.com');
    assert.equal(row?.certPem, 'CERT');
    assert.equal(row?.failures, 2);
    assert.equal(row?.orderAt, 120_000);
    assert.equal(row?.lastError, 'rateLimited');
    assert.deepEqual((await repository.certificates()).map((each) => each.name), ['a.example.com']);
  });

  it('answers a challenge until it expires or is deleted', async () => {
    await repository.putChallenge('http:tok', 'tok.thumb', Date.now() + 60_000);
    assert.equal(await repository.challenge('http:tok', Date.now()), 'tok.thumb');
    assert.equal(await repository.challenge('http:tok', Date.now() + 120_000), undefined);
    await repository.putChallenge('http:tok', 'tok.other', Date.now() + 60_000);
    assert.equal(await repository.challenge('http:tok', Date.now()), 'tok.other');
    await repository.deleteChallenge('http:tok');
    assert.equal(await repository.challenge('http:tok', Date.now()), undefined);
  });
});
