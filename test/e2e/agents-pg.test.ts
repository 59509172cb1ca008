// @test-pass postgres
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { makeAccount, makeCredential, ngrokCode, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { api, cleanupProcesses, generateApiKey, startServer, tempDatabaseUrl, type ServerProcess } from '../helpers/server-process.js';

/**
 * Agents with several instances on one PostgreSQL database (TUNNELS.md §7, issue 11): a
 * data-plane instance beside an API-only one, and two data-plane instances racing for a name.
 * Runs when TEST_DATABASE_URL names a PostgreSQL database (a schema of its own, dropped after).

 */
const postgres = process.env.TEST_DATABASE_URL;

function events(server: ServerProcess, event: string): Record<string, unknown>[] {
  return server.logs().filter((line) => line.event === event);
}

describe('agents on several instances sharing PostgreSQL', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  let plane: DataPlaneServer;
  let apiOnly: ServerProcess;
  let planeTwo: DataPlaneServer;
  const sessions: ngrok.Session[] = [];

  before(async () => {
    const databaseUrl = tempDatabaseUrl();
    const key = generateApiKey();
    plane = await startDataPlaneServer({ databaseUrl, bootstrapApiKey: key });
    [apiOnly, planeTwo] = await Promise.all([
      startServer({ databaseUrl, bootstrapApiKey: key }),
      startDataPlaneServer({ databaseUrl, bootstrapApiKey: key }),
    ]);
  });

  after(async () => {
    await Promise.allSettled(sessions.map((session) => session.close()));
    await cleanupProcesses();
  });

  async function connect(server: DataPlaneServer, token: string, onDisconnect?: () => void): Promise<ngrok.Session> {
    let builder = new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert());
    if (onDisconnect) builder = builder.handleDisconnection(() => (onDisconnect(), true));
    const session = await builder.connect();
    sessions.push(session);
    return session;
  }

  it('the API-only instance serves no agents', () => {
    const listening = apiOnly.logs().find((line) => line.msg === 'burrow is listening');
    assert.deepEqual(listening?.listeners, [apiOnly.baseUrl]);
  });

  it('sessions, tunnels and endpoints are listed by both instances, and leave both lists with their session', async () => {
    const cred = await makeCredential(apiOnly, []);
    const session = await connect(plane, cred.token);
    const listener = await session.httpEndpoint().domain('pg-listed.example.com').listen(false);
    const start = await waitFor('session_start', () => events(plane, 'session_start').find((e) => e.credential_id === cred.id));
    for (const server of [plane, apiOnly]) {
      const sessionIds = ((await api(server, 'GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[]).map((s) => s.id);
      assert.ok(sessionIds.includes(String(start.session_id)), `${server.baseUrl} lists the session`);
      const tunnels = (await api(server, 'GET', '/tunnels')).body.tunnels as { id: string; public_url?: string }[];
      assert.equal(tunnels.find((tunnel) => tunnel.id === listener.id())?.public_url, listener.url());
      const endpoints = (await api(server, 'GET', '/endpoints')).body.endpoints as { url: string }[];
      assert.ok(endpoints.some((endpoint) => endpoint.url === listener.url()));
    }
    await session.close();
    // The SDK's close() sends no GOAWAY and leaves TLS open: deleting the credential ends it now.
    assert.equal((await api(apiOnly, 'DELETE', `/credentials/${cred.id}`)).status, 204);
    await waitFor('the session to leave the API-only instance’s list', async () => {
      const listed = ((await api(apiOnly, 'GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[]).map((s) => s.id);
      return !listed.includes(String(start.session_id));
    }, 3_000);
  });

  it('a credential deleted through the API-only instance closes its session on the data-plane instance within 1 s', async () => {
    const cred = await makeCredential(apiOnly, []);
    let disconnectedAt = 0;
    const session = await connect(plane, cred.token, () => (disconnectedAt ||= Date.now()));
    const listener = await session.httpEndpoint().domain('pg-revoke.example.com').listen(false);
    assert.ok(listener.url());
    const start = await waitFor('session_start', () => events(plane, 'session_start').find((e) => e.credential_id === cred.id));
    assert.equal((await api(apiOnly, 'DELETE', `/credentials/${cred.id}`)).status, 204);
    const deletedAt = Date.now();
    await waitFor('the SDK to see the disconnect', () => disconnectedAt > 0, 3_000);
    assert.ok(disconnectedAt - deletedAt < 1_000, `disconnected ${disconnectedAt - deletedAt} ms after the delete`);
    const end = await waitFor('session_end', () => events(plane, 'session_end').find((e) => e.session_id === start.session_id));
    assert.equal(end.reason, 'credential-deleted');
  });

  it('an ACL narrowed through the API-only instance stops the tunnel on the data-plane instance', async () => {
    const cred = await makeCredential(apiOnly, ['bind:pg-keep.example.com', 'bind:pg-drop.example.com']);
    const session = await connect(plane, cred.token);
    const drop = await session.httpEndpoint().domain('pg-drop.example.com').listenAndForward('http://127.0.0.1:9');
    const stopped = drop.join().then(
      () => Date.now(),
      () => Date.now(),
    );
    assert.equal((await api(apiOnly, 'PATCH', `/credentials/${cred.id}`, { body: { acl: ['bind:pg-keep.example.com'] } })).status, 200);
    const patchedAt = Date.now();
    assert.ok((await stopped) - patchedAt < 1_000);
  });

  it('two data-plane instances racing for one hostname or port for two accounts: exactly one wins each time', async () => {
    const other = await makeAccount(apiOnly, 'racer');
    const mine = await makeCredential(apiOnly, []);
    const theirs = await makeCredential(apiOnly, [], other.apiKey);
    const [one, two] = await Promise.all([connect(plane, mine.token), connect(planeTwo, theirs.token)]);
    // Names only: the two instances have TCP ranges of their own (two data-plane instances
    // cannot share one port range on one host); a port claim is the same database claim.
    for (let round = 0; round < 8; round++) {
      const name = `race-${round}.example.com`;
      const outcomes = await Promise.allSettled([
        one.httpEndpoint().domain(name).listen(false),
        two.httpEndpoint().domain(name).listen(false),
      ]);
      const won = outcomes.filter((o): o is PromiseFulfilledResult<ngrok.Listener> => o.status === 'fulfilled');
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      assert.equal(won.length, 1, `round ${round}: exactly one bind of ${name} won (${lost.map((l) => String(l.reason?.message)).join('; ')})`);
      assert.equal(ngrokCode(lost[0]!.reason).code, 'ERR_NGROK_320', String(lost[0]!.reason?.message));
      assert.match(String(won[0]!.value.url()), new RegExp(`^https://${name.replace(/\./g, '\\.')}:\\d+$`));
      await won[0]!.value.close();
    }
    // A name released by one instance can be taken through the other.
    const first = await one.httpEndpoint().domain('handover.example.com').listen(false);
    await assert.rejects(two.httpEndpoint().domain('handover.example.com').listen(false), (error: unknown) => ngrokCode(error).code === 'ERR_NGROK_320');
    await first.close();
    const taken = await two.httpEndpoint().domain('handover.example.com').listen(false);
    assert.equal(taken.url(), `https://handover.example.com:${planeTwo.plane.tlsPort}`);
    await taken.close();
  });
});
