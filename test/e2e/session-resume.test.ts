import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { authRequest, RawAgent } from '../helpers/raw-agent.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

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

  for (const delayMs of [0, 1, 2, 3, 5, 8]) {
    it(`keeps the session on record when the old connection drops ${delayMs} ms after the new Auth`, async () => {
      const old = await RawAgent.connect(server.plane.agentPort, server.caCert());
      const first = await old.auth(token);
      const id = String(first.ClientId);
      const cookie = String((first.Extra as Record<string, unknown>).Cookie);
      const fresh = await RawAgent.connect(server.plane.agentPort, server.caCert());

      const hello = authRequest(token);
      hello.ClientId = id;
      (hello.Extra as Record<string, unknown>).Cookie = cookie;
      fresh.open(3, 0, JSON.stringify(hello));
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      old.destroy();
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
