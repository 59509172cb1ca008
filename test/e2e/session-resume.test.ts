import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Flag, FrameType } from '../../src/tunnels/muxado/index.js';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { authRequest, RawAgent } from '../helpers/raw-agent.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

const BIND = 1;

/**
 * A reconnect that resumes its session id (TUNNELS.md §2 "Reconnects") while burrow is still
 * tearing down the old connection: the old connection's end must not remove the new one's
 * session record. The old connection is dropped at several moments around the new Auth, so that
 * one of them lands while the new session's row is being written.
 */
describe('a resumed session racing the end of its old connection', () => {
  let server: DataPlaneServer;
  let token: string;

  before(async () => {
    server = await startDataPlaneServer();
    token = (await makeCredential(server, [])).token;
  });

  after(cleanupProcesses);

  it('a rebind whose options name no target gets its URL back from its Token', async () => {
    const old = await RawAgent.connect(server.plane.agentPort, server.caCert());
    const first = await old.auth(token);
    const bind = (agent: RawAgent, stream: number, proto: string, id = '', extra: Record<string, unknown> = {}) => {
      agent.open(stream, BIND, JSON.stringify({ Id: id, Proto: proto, Opts: {}, Extra: extra }));
      return agent.reply(stream);
    };
    const https = await bind(old, 5, 'https');
    const tcp = await bind(old, 7, 'tcp');
    assert.match(String(https.URL), /^https:\/\/[0-9a-z]+\.burrow\.localhost:/, JSON.stringify(https));
    assert.match(String(tcp.URL), /^tcp:\/\/127\.0\.0\.1:\d+$/, JSON.stringify(tcp));
    old.destroy();

    const fresh = await RawAgent.connect(server.plane.agentPort, server.caCert());
    const hello = authRequest(token);
    hello.ClientId = first.ClientId;
    (hello.Extra as Record<string, unknown>).Cookie = (first.Extra as Record<string, unknown>).Cookie;
    fresh.open(3, 0, JSON.stringify(hello));
    assert.equal((await fresh.reply(3)).ClientId, first.ClientId);
    for (const [stream, proto, before] of [[5, 'https', https], [7, 'tcp', tcp]] as const) {
      const again = await bind(fresh, stream, proto, String(before.Id), { Token: (before.Extra as Record<string, unknown>).Token });
      assert.equal(again.Id, before.Id, JSON.stringify(again));
      assert.equal(again.URL, before.URL, `${proto}: the URL is kept`);
    }
    // A Token that proves nothing: a new id and, for a random bind, a new URL.
    const forged = await bind(fresh, 9, 'https', String(https.Id), { Token: `${'A'.repeat(32)}.${Buffer.from('h:evil.example.com').toString('base64url')}` });
    assert.notEqual(forged.Id, https.Id);
    assert.notEqual(forged.URL, https.URL);
    fresh.destroy();
  });

  it("a second session shown a live tunnel's Id and Token binds with an id of its own, and the first keeps serving", async () => {
    const bind = (agent: RawAgent, proto: string, id: string, opts: unknown, extra: Record<string, unknown>) => {
      agent.open(5, BIND, JSON.stringify({ Id: id, Proto: proto, Opts: opts, Extra: extra }));
      return agent.reply(5);
    };
    const owner = await RawAgent.connect(server.plane.agentPort, server.caCert());
    await owner.auth(token);
    const first = await bind(owner, 'tcp', '', {}, { PoolingEnabled: true });
    const other = await RawAgent.connect(server.plane.agentPort, server.caCert());
    await other.auth(token);
    const token1 = (first.Extra as Record<string, unknown>).Token;
    const second = await bind(other, 'tcp', String(first.Id), first.Opts, { Token: token1, PoolingEnabled: true });
    assert.equal(second.Error ?? '', '', JSON.stringify(second));
    assert.notEqual(second.Id, first.Id, 'the live id stays the first tunnel\'s');
    assert.equal(second.URL, first.URL, 'both pooled on the address');
    const ids = async () => ((await api(server, 'GET', '/tunnels')).body.tunnels as { id: string }[]).map((t) => t.id);
    await waitFor('both tunnels to be listed', async () => (await ids()).includes(String(second.Id)));
    assert.ok((await ids()).includes(String(first.Id)));

    other.destroy();
    await waitFor('the second tunnel to go', async () => !(await ids()).includes(String(second.Id)), 3_000);
    assert.ok((await ids()).includes(String(first.Id)), 'the first tunnel is still listed');
    // and still served: a connection to the address reaches the first agent as a proxy stream
    const port = Number(new URL(String(first.URL)).port);
    const client = connect(port, '127.0.0.1');
    client.on('error', () => {});
    // (burrow's heartbeats open streams of their own type, 0xffffffff)
    await owner.until('a proxy stream to the first agent', () =>
      owner.frames().find((f) => f.type === FrameType.Data && (f.flags & Flag.Syn) !== 0 && f.payload.length >= 4 && f.payload.readUInt32BE(0) === 3),
    );
    client.destroy();
    owner.destroy();
  });

  it('a rebind whose remembered URL another tunnel of the account took meanwhile keeps its id and gets a new URL', async () => {
    const bind = (agent: RawAgent, stream: number, proto: string, id: string, opts: unknown, extra: Record<string, unknown> = {}) => {
      agent.open(stream, BIND, JSON.stringify({ Id: id, Proto: proto, Opts: opts, Extra: extra }));
      return agent.reply(stream);
    };
    const old = await RawAgent.connect(server.plane.agentPort, server.caCert());
    const first = await old.auth(token);
    const https = await bind(old, 5, 'https', '', {});
    const tcp = await bind(old, 7, 'tcp', '', {});
    old.destroy();
    await waitFor('the old tunnels to go', async () => (await api(server, 'GET', `/tunnels/${String(tcp.Id)}`)).status === 404, 3_000);

    const other = await RawAgent.connect(server.plane.agentPort, server.caCert());
    await other.auth(token);
    const hostname = new URL(String(https.URL)).hostname;
    assert.equal((await bind(other, 5, 'https', '', { Hostname: hostname })).URL, https.URL);
    assert.equal((await bind(other, 7, 'tcp', '', { Addr: new URL(String(tcp.URL)).host })).URL, tcp.URL);

    const fresh = await RawAgent.connect(server.plane.agentPort, server.caCert());
    const hello = authRequest(token);
    hello.ClientId = first.ClientId;
    (hello.Extra as Record<string, unknown>).Cookie = (first.Extra as Record<string, unknown>).Cookie;
    fresh.open(3, 0, JSON.stringify(hello));
    await fresh.reply(3);
    for (const [stream, proto, before] of [[5, 'https', https], [7, 'tcp', tcp]] as const) {
      const again = await bind(fresh, stream, proto, String(before.Id), {}, { Token: (before.Extra as Record<string, unknown>).Token });
      assert.equal(again.Error ?? '', '', `${proto}: ${JSON.stringify(again)}`);
      assert.equal(again.Id, before.Id, `${proto}: the id is kept`);
      assert.notEqual(again.URL, before.URL, `${proto}: a new URL, the old one being served by the other session`);
    }
    other.destroy();
    fresh.destroy();
  });

  // Negative: the old connection drops first, its end is running when the Auth comes.
  for (const delayMs of [-2, -1, 0, 1, 2, 3, 5, 8]) {
    it(`keeps the session on record when the old connection drops ${delayMs} ms after the new Auth`, async () => {
      const old = await RawAgent.connect(server.plane.agentPort, server.caCert());
      const first = await old.auth(token);
      const id = String(first.ClientId);
      const cookie = String((first.Extra as Record<string, unknown>).Cookie);
      const fresh = await RawAgent.connect(server.plane.agentPort, server.caCert());

      const hello = authRequest(token);
      hello.ClientId = id;
      (hello.Extra as Record<string, unknown>).Cookie = cookie;
      if (delayMs < 0) {
        old.destroy();
        await new Promise((resolve) => setTimeout(resolve, -delayMs));
        fresh.open(3, 0, JSON.stringify(hello));
      } else {
        fresh.open(3, 0, JSON.stringify(hello));
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        old.destroy();
      }
      const reply = await fresh.reply(3);
      assert.equal(reply.ClientId, id, JSON.stringify(reply));

      await waitFor('the old connection to be ended', () => server.logs().some((l) => l.event === 'session_end' && l.session_id === id), 3_000);
      // Whatever the old connection's end did, it is over by now; the new session is live.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const listed = await api(server, 'GET', `/tunnel_sessions/${id}`);
      assert.equal(listed.status, 200, `the resumed session ${id} is still listed`);
      fresh.destroy();
      await waitFor('the session to go', async () => (await api(server, 'GET', `/tunnel_sessions/${id}`)).status === 404, 3_000);
    });
  }
});
