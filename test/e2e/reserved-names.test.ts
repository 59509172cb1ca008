import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { Ngrok } from '@ngrok/ngrok-api';
import { makeAccount, makeCredential, ngrokCode, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { apiError, rejection } from '../helpers/ngrok-client.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/**
 * Reserved domains and addresses (CERTIFICATES.md §0) end to end: the official API client
 * (@ngrok/ngrok-api) reserves, the official agent SDK (@ngrok/ngrok) binds, against real
 * `burrow serve` processes.
 */

const sessions: ngrok.Session[] = [];

async function connect(server: DataPlaneServer, token: string): Promise<ngrok.Session> {
  const session = await new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert()).connect();
  sessions.push(session);
  return session;
}

async function refusedWith(work: Promise<unknown>, code: string): Promise<Error> {
  const outcome = await work.then(
    (listener) => assert.fail(`expected ${code}, bound ${(listener as ngrok.Listener).url()}`),
    (error: unknown) => error as Error,
  );
  assert.equal(ngrokCode(outcome).code, code, outcome.message);
  return outcome;
}

/** The npm client rejects a 204 with the SyntaxError of parsing its empty body (see ngrok-client.test.ts): done all the same. */
async function deleted(work: Promise<void>): Promise<void> {
  await work.catch((error: unknown) => assert.ok(error instanceof SyntaxError, `delete failed: ${JSON.stringify(error)}`));
}

after(async () => {
  await Promise.allSettled(sessions.map((session) => session.close()));
  await cleanupProcesses();
});

describe('reserved names on a first-come server', () => {
  let server: DataPlaneServer;
  let owner: Ngrok;
  let other: { accountId: string; apiKey: string; token: string };

  before(async () => {
    server = await startDataPlaneServer();
    owner = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
    const account = await makeAccount(server, 'other');
    other = { ...account, token: (await makeCredential(server, [], account.apiKey)).token };
  });

  it('the official client creates, gets, lists, updates and deletes reserved domains', async () => {
    const created = await owner.reservedDomains.create({ domain: 'Client.Example.com', region: '', description: 'from the client' });
    assert.match(created.id, /^rd_[0-9A-Za-z]{27}$/);
    assert.equal(created.uri, `${server.baseUrl}/reserved_domains/${created.id}`);
    assert.equal(created.domain, 'client.example.com');
    assert.equal(created.region, 'local');
    assert.equal(created.certificateManagementPolicy, null);
    const got = await owner.reservedDomains.get(created.id);
    assert.deepEqual(got, created);
    const updated = await owner.reservedDomains.update({ id: created.id, metadata: 'meta', certificateManagementPolicy: { authority: 'letsencrypt', privateKeyType: 'ecdsa' } });
    assert.equal(updated.metadata, 'meta');
    assert.equal(updated.description, 'from the client');
    assert.deepEqual(updated.certificateManagementPolicy, { authority: 'letsencrypt', privateKeyType: 'ecdsa' });
    assert.equal(updated.certificateManagementStatus?.provisioningJob?.errorCode, 'ACME_NOT_CONFIGURED');
    await deleted(owner.reservedDomains.deleteCertificateManagementPolicy(created.id));
    assert.equal((await owner.reservedDomains.get(created.id)).certificateManagementPolicy, null);
    const listed = await owner.reservedDomains.list();
    assert.ok(listed.some((item) => item.id === created.id));
    // the client's errors: a taken name, and certificate_id refused by name
    const taken = apiError(await rejection(owner.reservedDomains.create({ domain: 'client.example.com', region: '' })), 400);
    assert.equal(taken.errorCode, 'ERR_NGROK_413');
    const theirs = new Ngrok({ apiToken: other.apiKey, baseUrl: server.baseUrl });
    assert.equal(apiError(await rejection(theirs.reservedDomains.create({ domain: 'client.example.com', region: '' })), 400).errorCode, 'ERR_NGROK_414');
    const cert = apiError(await rejection(owner.reservedDomains.create({ domain: 'cert.example.com', region: '', certificateId: 'cert_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns' })), 400);
    assert.equal(cert.errorCode, 'ERR_NGROK_215');
    assert.equal(cert.details.get('param'), 'certificate_id');
    apiError(await rejection(theirs.reservedDomains.get(created.id)), 404);
    await deleted(owner.reservedDomains.delete(created.id));
    apiError(await rejection(owner.reservedDomains.get(created.id)), 404);
  });

  it('the official client creates, gets, lists, updates and deletes reserved addresses', async () => {
    const created = await owner.reservedAddrs.create({ region: '', description: 'db' });
    assert.match(created.id, /^ra_[0-9A-Za-z]{27}$/);
    const { first, last } = server.plane.tcpPorts;
    const port = Number(created.addr.split(':')[1]);
    assert.ok(created.addr.startsWith('127.0.0.1:') && port >= first && port <= last, created.addr);
    assert.deepEqual(await owner.reservedAddrs.get(created.id), created);
    const updated = await owner.reservedAddrs.update({ id: created.id, metadata: 'm' });
    assert.equal(updated.metadata, 'm');
    assert.equal(updated.addr, created.addr);
    assert.ok((await owner.reservedAddrs.list()).some((item) => item.id === created.id));
    await deleted(owner.reservedAddrs.delete(created.id));
    apiError(await rejection(owner.reservedAddrs.get(created.id)), 404);
  });

  it("another account's SDK is refused a reserved name and what a wildcard covers while the owner is offline (320); the owner binds it", async () => {
    await owner.reservedDomains.create({ domain: 'owned.example.com', region: '' });
    await owner.reservedDomains.create({ domain: '*.wild.example.com', region: '' });
    const theirs = await connect(server, other.token);
    const refusal = await refusedWith(theirs.httpEndpoint().domain('owned.example.com').listen(false), 'ERR_NGROK_320');
    assert.match(refusal.message, /reserved for another account/);
    await refusedWith(theirs.httpEndpoint().domain('a.b.wild.example.com').listen(false), 'ERR_NGROK_320');
    // a wildcard endpoint over the owner's name would answer for it while the owner is away
    await refusedWith(theirs.httpEndpoint().domain('*.example.com').listen(false), 'ERR_NGROK_320');
    // names nobody reserved stay first-come
    const free = await theirs.httpEndpoint().domain('free.example.com').listen(false);
    await free.close();
    const mine = await connect(server, (await makeCredential(server, [])).token);
    const bound = await mine.httpEndpoint().domain('owned.example.com').listen(false);
    assert.equal(bound.url(), `https://owned.example.com:${server.plane.tlsPort}`);
    const under = await mine.tlsEndpoint().domain('x.wild.example.com').listen(false);
    await Promise.all([bound.close(), under.close()]);
  });

  it("another account is refused a reserved address (309), and random addresses never land on reserved ports", async () => {
    const total = server.plane.tcpPorts.last - server.plane.tcpPorts.first + 1;
    const reserved = [];
    for (let i = 0; i < total - 1; i++) reserved.push(await owner.reservedAddrs.create({ region: '' }));
    const theirs = await connect(server, other.token);
    await refusedWith(theirs.tcpEndpoint().remoteAddr(reserved[0]!.addr).listen(false), 'ERR_NGROK_309');
    const reservedAddrs = new Set(reserved.map((item) => item.addr));
    const random = await theirs.tcpEndpoint().listen(false);
    const url = String(random.url());
    assert.ok(!reservedAddrs.has(url.replace('tcp://', '')), `${url} is a reserved address`);
    await random.close();
    for (const item of reserved) await deleted(owner.reservedAddrs.delete(item.id));
  });

  it("reserving a name another account is bound on stops that account's tunnel (320)", async () => {
    const theirs = await connect(server, other.token);
    const listener = await theirs.httpEndpoint().domain('taken-live.example.com').listenAndForward('http://127.0.0.1:9');
    const stopped = listener.join().then(
      () => undefined,
      (error: Error) => error,
    );
    const reserved = await owner.reservedDomains.create({ domain: 'taken-live.example.com', region: '' });
    const error = await stopped;
    assert.match(String(error?.message), /ERR_NGROK_320/);
    await deleted(owner.reservedDomains.delete(reserved.id));
  });

  it('deleting a reserved address while it is bound stops the tunnel within a second', async () => {
    const addr = await owner.reservedAddrs.create({ region: '' });
    const mine = await connect(server, (await makeCredential(server, [])).token);
    const listener = await mine.tcpEndpoint().remoteAddr(addr.addr).listenAndForward('tcp://127.0.0.1:9');
    assert.equal(listener.url(), `tcp://${addr.addr}`);
    const stopped = listener.join().then(
      () => ({ at: Date.now(), error: undefined as Error | undefined }),
      (error: Error) => ({ at: Date.now(), error }),
    );
    // the watch has seen the tunnel on its reserved port (it polls every 400 ms)
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await deleted(owner.reservedAddrs.delete(addr.id));
    const deletedAt = Date.now();
    const { at, error } = await stopped;
    assert.ok(at - deletedAt < 1_500, `stopped ${at - deletedAt} ms after the DELETE`);
    assert.match(String(error?.message), /ERR_NGROK_307/);
    const revoked = await waitFor('tunnel_revoked', () => server.logs().find((line) => line.event === 'tunnel_revoked' && line.tunnel_id === listener.id()));
    assert.equal(revoked.error_code, 'ERR_NGROK_307');
  });
});

describe('REQUIRE_RESERVED_NAMES=true', () => {
  let server: DataPlaneServer;
  let owner: Ngrok;
  let token: string;

  before(async () => {
    server = await startDataPlaneServer({ extraEnv: { REQUIRE_RESERVED_NAMES: 'true' } });
    owner = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
    token = (await makeCredential(server, [])).token;
  });

  it('refuses an unreserved custom name (319) and fixed address (307); EDGE_DOMAIN names, reserved ones and random addresses are fine', async () => {
    const session = await connect(server, token);
    const refusal = await refusedWith(session.httpEndpoint().domain('custom.example.com').listen(false), 'ERR_NGROK_319');
    assert.match(refusal.message, /You must reserve a custom hostname/);
    await refusedWith(session.tcpEndpoint().remoteAddr(`127.0.0.1:${server.plane.tcpPorts.first}`).listen(false), 'ERR_NGROK_307');
    const generated = await session.httpEndpoint().listen(false);
    assert.match(String(generated.url()), /\.burrow\.localhost/);
    const random = await session.tcpEndpoint().listen(false);
    await owner.reservedDomains.create({ domain: 'custom.example.com', region: '' });
    const addr = await owner.reservedAddrs.create({ region: '' });
    const custom = await session.httpEndpoint().domain('custom.example.com').listen(false);
    const fixed = await session.tcpEndpoint().remoteAddr(addr.addr).listen(false);
    await Promise.all([generated.close(), random.close(), custom.close(), fixed.close()]);
  });

  it('deleting a bound reserved domain stops its tunnel (319): the name needs a reservation again', async () => {
    const reserved = await owner.reservedDomains.create({ domain: 'goes.example.com', region: '' });
    const session = await connect(server, token);
    const listener = await session.httpEndpoint().domain('goes.example.com').listenAndForward('http://127.0.0.1:9');
    const stopped = listener.join().then(
      () => undefined,
      (error: Error) => error,
    );
    await deleted(owner.reservedDomains.delete(reserved.id));
    assert.match(String((await stopped)?.message), /ERR_NGROK_319/);
  });
});
