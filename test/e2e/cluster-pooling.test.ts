// @test-pass postgres
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { clusterSchema, clusterSkipReason } from '../helpers/cluster-db.js';
import { EDGE_A, EDGE_B, startInstancePair, type PairedInstance as Instance } from '../helpers/cluster-pair.js';
import { makeAccount, makeCredential, ngrokCode } from '../helpers/data-plane.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

/**
 * CLUSTER.md §2 for pooled endpoints: two official SDK agents of one account, one on instance A
 * and one on B, bind one URL with pooling enabled. Each instance round-robins its public
 * connections over both agents (its own, and the other instance's through the link); one endpoint
 * is listed. When the agent of the instance holding the endpoint row leaves, the row and the
 * name's claim pass to B; when the last agent leaves, both go.
 *
 * PostgreSQL is its own (test/helpers/cluster-db.ts): it runs once per CI run, in the PostgreSQL pass.
 */
const skip = await clusterSkipReason('cluster-pooling suite');

const HOST = 'pool.burrow.localhost';

describe('a pooled endpoint spread over two instances', { skip, timeout: 60_000 }, () => {
  const schema = clusterSchema('pool');
  const closers: (() => unknown)[] = [];
  let a: Instance;
  let b: Instance;
  let httpPort: number;
  let token: string;
  /** An authtoken of another account. */
  let strangerToken: string;
  let sessionA: ngrok.Session;
  let sessionB: ngrok.Session;
  let listenerA: ngrok.Listener;
  let listenerB: ngrok.Listener;
  let endpointId: string;
  /** A local HTTP server per agent, each answering with its name. */
  const local: Record<'one' | 'two', number> = { one: 0, two: 0 };

  before(async () => {
    const pair = await startInstancePair(schema.url);
    ({ a, b } = pair);
    httpPort = pair.ports.http;
    const stranger = await makeAccount(a, 'stranger');
    strangerToken = (await makeCredential(a, [], stranger.apiKey)).token;
    for (const name of ['one', 'two'] as const) {
      const server = http.createServer((_req, res) => res.end(name));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      // the SDK's forwarder may still hold a keep-alive connection to it: close that too, or the
      // server (and this file's process) stays open
      closers.push(() => {
        server.close();
        server.closeAllConnections();
      });
      local[name] = (server.address() as { port: number }).port;
    }
    token = (await makeCredential(a, [])).token;
    sessionA = await connect(a, token);
    sessionB = await connect(b, token);
  });

  after(async () => {
    for (const close of closers.reverse()) await close();
    await cleanupProcesses();
    await schema.drop();
  });

  async function connect(instance: Instance, authtoken: string): Promise<ngrok.Session> {
    const session = await new ngrok.SessionBuilder().authtoken(authtoken).serverAddr(`127.0.0.1:${instance.agentPort}`).caCert(instance.ca).connect();
    closers.push(() => session.close().catch(() => {}));
    return session;
  }

  function get(edgeHost: string, host = HOST): Promise<string> {
    return new Promise((resolve) => {
      const req = http.request({ host: edgeHost, port: httpPort, path: '/', headers: { host }, agent: false, timeout: 5_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => resolve(res.statusCode === 200 ? Buffer.concat(chunks).toString() : `status ${res.statusCode}`));
      });
      req.once('error', (error) => resolve(error.message));
      req.once('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
  }

  /** How many of `count` requests through `edgeHost` each agent (or each failure) answered. */
  async function tally(edgeHost: string, count = 8): Promise<Record<string, number>> {
    const answers: Record<string, number> = {};
    for (let i = 0; i < count; i++) {
      const answer = await get(edgeHost);
      answers[answer] = (answers[answer] ?? 0) + 1;
    }
    return answers;
  }

  /** Tallies until `wanted` holds (the other instance's routes arrive within a second or so), at most 5 s. */
  async function tallyUntil(edgeHost: string, wanted: (answers: Record<string, number>) => boolean): Promise<Record<string, number>> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const answers = await tally(edgeHost);
      if (wanted(answers) || Date.now() > deadline) return answers;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const pooled = (session: ngrok.Session, pooling = true) => session.httpEndpoint().domain(HOST).scheme('HTTP').poolingEnabled(pooling);
  const listed = async (instance: Instance) => ((await api(instance, 'GET', '/endpoints')).body.endpoints as { id: string; public_url: string }[]).filter((each) => each.public_url === `http://${HOST}:${httpPort}`);

  it('two pooled agents of one account, on A and on B, both bind the URL; one endpoint is listed, both tunnels name it', async () => {
    listenerA = await pooled(sessionA).listenAndForward(`http://127.0.0.1:${local.one}`);
    listenerB = await pooled(sessionB).listenAndForward(`http://127.0.0.1:${local.two}`);
    assert.equal(listenerB.url(), listenerA.url());
    const endpoints = await listed(b);
    assert.equal(endpoints.length, 1, JSON.stringify(endpoints));
    endpointId = endpoints[0]!.id;
    const tunnels = (await api(a, 'GET', '/tunnels')).body.tunnels as { public_url: string; endpoint?: { id: string } }[];
    assert.deepEqual(
      tunnels.filter((tunnel) => tunnel.public_url === listenerA.url()).map((tunnel) => tunnel.endpoint?.id),
      [endpointId, endpointId],
    );
  });

  it('requests through each instance reach both agents', async () => {
    const both = (answers: Record<string, number>) => (answers.one ?? 0) > 0 && (answers.two ?? 0) > 0 && (answers.one ?? 0) + (answers.two ?? 0) === 8;
    for (const edge of [EDGE_A, EDGE_B]) {
      const answers = await tallyUntil(edge, both);
      assert.ok(both(answers), `through ${edge}: ${JSON.stringify(answers)}`);
      // round-robin: an even split once both are routed
      assert.deepEqual(await tally(edge), { one: 4, two: 4 }, `through ${edge}`);
    }
  });

  it('a bind of the URL without pooling on the other instance is refused (334)', async () => {
    const other = await connect(b, token);
    const error = await pooled(other, false).listen(false).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    assert.equal(ngrokCode(error).code, 'ERR_NGROK_334');
  });

  it("the holder's agent leaves: the URL keeps answering through both instances from the other one, still listed, its name still the account's", async () => {
    await listenerA.close();
    for (const edge of [EDGE_A, EDGE_B]) {
      const answers = await tallyUntil(edge, (each) => each.two === 8);
      assert.deepEqual(answers, { two: 8 }, `through ${edge}`);
    }
    assert.deepEqual((await listed(a)).map((endpoint) => endpoint.id), [endpointId]);
    for (const instance of [a, b]) {
      const session = await connect(instance, strangerToken);
      const error = await pooled(session).listen(false).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      assert.equal(ngrokCode(error).code, 'ERR_NGROK_320', `on ${instance === a ? 'A' : 'B'}`);
    }
  });

  it('tunnels with different policies on A and on B: each request runs the policy of the tunnel it goes to, through either instance', async () => {
    const host = 'policies.burrow.localhost';
    const respond = (body: string) => JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 200, body } }] }] });
    const bind = (session: ngrok.Session, body: string) => session.httpEndpoint().domain(host).scheme('HTTP').poolingEnabled(true).trafficPolicy(respond(body)).listen(false);
    const onA = await bind(sessionA, 'policy A');
    closers.push(() => onA.close().catch(() => {}));
    const onB = await bind(sessionB, 'policy B');
    closers.push(() => onB.close().catch(() => {}));
    for (const edge of [EDGE_A, EDGE_B]) {
      // until the other instance's tunnel is routed here too (a batch may straddle its arrival),
      // then four requests in a row
      let seen: string[] = [];
      const deadline = Date.now() + 5_000;
      do {
        seen = [];
        for (let i = 0; i < 4; i++) seen.push(await get(edge, host));
      } while (new Set(seen).size < 2 && Date.now() < deadline);
      seen = [];
      for (let i = 0; i < 4; i++) seen.push(await get(edge, host));
      assert.deepEqual([...seen].sort(), ['policy A', 'policy A', 'policy B', 'policy B'], `through ${edge}: ${seen.join(', ')}`);
      for (let i = 1; i < seen.length; i++) assert.notEqual(seen[i], seen[i - 1], `round-robin over both instances' tunnels, through ${edge}: ${seen.join(', ')}`);
    }
    // one endpoint is listed, with the policy of the bind that opened it
    const endpoints = (await api(b, 'GET', '/endpoints')).body.endpoints as { public_url: string; traffic_policy: string }[];
    assert.deepEqual(endpoints.filter((each) => each.public_url === `http://${host}:${httpPort}`).map((each) => each.traffic_policy), [respond('policy A')]);
  });

  it('the last agent leaves: the endpoint row and the claim go (another account may bind the name)', async () => {
    await listenerB.close();
    assert.deepEqual(await listed(a), []);
    const session = await connect(a, strangerToken);
    const listener = await pooled(session, false).listen(false); // false: no local socket server, which would keep this process alive
    assert.equal(listener.url(), listenerA.url());
    await listener.close();
  });
});
