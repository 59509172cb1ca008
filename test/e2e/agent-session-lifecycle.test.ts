import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { encodeData, Flag } from '../../src/tunnels/muxado/index.js';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { RawAgent, authRequest } from '../helpers/raw-agent.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

/**
 * When an agent session begins and ends, whatever the order of events (issue 29, items 2, 3
 * and 11): a session exists only while its connection does, a stopped SDK session is gone
 * within 1 s (TUNNELS.md §2), and failed Auths are throttled per client address.
 */

after(cleanupProcesses);

async function listed(server: DataPlaneServer): Promise<string[]> {
  const answer = await api(server, 'GET', '/tunnel_sessions');
  return (answer.body.tunnel_sessions as { id: string }[]).map((session) => session.id);
}

function connect(server: DataPlaneServer, token: string): ngrok.SessionBuilder {
  return new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert());
}

/** A token of the right form whose secret is wrong: ERR_NGROK_107. */
function wrongSecret(token: string): string {
  return token.slice(0, -1) + (token.endsWith('a') ? 'b' : 'a');
}

describe('a session exists only while its connection does', () => {
  it('an Auth whose connection closed meanwhile logs no session_start, is not listed and does not count against MAX_SESSIONS_PER_ACCOUNT', async () => {
    const server = await startDataPlaneServer({ env: { MAX_SESSIONS_PER_ACCOUNT: '2' } });
    const { token } = await makeCredential(server, []);
    for (let i = 0; i < 3; i++) {
      const agent = await RawAgent.connect(server.plane.agentPort, server.caCert());
      // the Auth and the end of the connection in one go: the end arrives while the Auth runs
      const head = Buffer.alloc(4);
      agent.socket.end(encodeData(3, Flag.Syn | Flag.Fin, Buffer.concat([head, Buffer.from(JSON.stringify(authRequest(token)))])));
      await agent.closed;
    }
    // each Auth ends one of three ways: abandoned (right), or, as before, started or refused 108 (the account locked out)
    const done = (l: Record<string, unknown>) => l.event === 'session_abandoned' || l.event === 'session_start' || l.event === 'session_refused';
    await waitFor('the three Auths to be done', () => server.logs().filter(done).length === 3, 10_000);
    assert.deepEqual(await listed(server), []);
    assert.equal(server.logs().filter((l) => l.event === 'session_start').length, 0);
    // the account's two sessions are still free
    const sessions = [await connect(server, token).connect(), await connect(server, token).connect()];
    assert.equal((await listed(server)).length, 2);
    await Promise.all(sessions.map((session) => session.close()));
  });
});

describe('a Bind again of a tunnel the session holds (the classic agent, once its Auth is answered)', () => {
  it('is answered with that tunnel: same id, URL and Token; a forged Token or another name gets a new tunnel', async () => {
    const server = await startDataPlaneServer();
    const { token } = await makeCredential(server, []);
    const agent = await RawAgent.connect(server.plane.agentPort, server.caCert());
    await agent.auth(token);
    const bind = (stream: number, id: string, extra: Record<string, unknown> = {}, opts: Record<string, unknown> = {}) => {
      agent.open(stream, 1, JSON.stringify({ Id: id, Proto: 'https', Opts: opts, Extra: extra }));
      return agent.reply(stream);
    };
    const first = await bind(5, '');
    const firstToken = (first.Extra as Record<string, unknown>).Token;
    const again = await bind(7, String(first.Id), { Token: firstToken });
    assert.deepEqual([again.Id, again.URL, (again.Extra as Record<string, unknown>).Token], [first.Id, first.URL, firstToken]);
    const forged = await bind(9, String(first.Id), { Token: `${'A'.repeat(32)}.${Buffer.from('h:x.example.com').toString('base64url')}` });
    assert.notEqual(forged.Id, first.Id);
    const renamed = await bind(11, String(first.Id), { Token: firstToken }, { Hostname: 'other.burrow.localhost' });
    assert.notEqual(renamed.Id, first.Id, JSON.stringify(renamed));
    const tunnels = (await api(server, 'GET', '/tunnels')).body.tunnels as unknown[];
    assert.equal(tunnels.length, 3, 'the second Bind made no tunnel of its own');
    agent.destroy();
  });
});

describe('a stopped session', () => {
  it('an SDK agent that handles Stop and closes: 204, then the session is gone within 1 s, and stays gone', async () => {
    const server = await startDataPlaneServer();
    const { token } = await makeCredential(server, []);
    let stopped = 0;
    const session: ngrok.Session = await connect(server, token)
      .handleStopCommand(() => {
        stopped++;
        void session.close();
      })
      .connect();
    await session.httpEndpoint().listen(false); // false: no local socket server, which would keep this process alive
    const [id] = await listed(server);
    const stop = await api(server, 'POST', `/tunnel_sessions/${id}/stop`, { body: {} });
    assert.equal(stop.status, 204, stop.text);
    const asked = Date.now();
    await waitFor('the session to be gone', async () => (await listed(server)).length === 0, 5_000);
    const took = Date.now() - asked;
    assert.equal(stopped, 1);
    assert.ok(took <= 1_000, `listed ${took} ms after the stop`);
    // the line is written after the row goes, and read from the child's stdout: wait for it
    const ended = () => server.logs().find((l) => l.event === 'session_end' && l.session_id === id);
    await waitFor('the session_end line', async () => ended() !== undefined, 2_000).catch(() => {});
    assert.equal(ended()?.reason, 'stopped');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.deepEqual(await listed(server), [], 'the SDK did not reconnect');
  });
});

describe('failed Auths are throttled per client address', () => {
  it('after 10 wrong authtokens the address is refused with ERR_NGROK_717, unread; counted in /metrics; another session is unaffected', async () => {
    const server = await startDataPlaneServer();
    const { token } = await makeCredential(server, []);
    const good = await connect(server, token).connect();
    const attempt = async (authtoken: string): Promise<string> => {
      const agent = await RawAgent.connect(server.plane.agentPort, server.caCert());
      const reply = await agent.auth(authtoken);
      agent.destroy();
      return /ERR_NGROK_\d+$/.exec(String(reply.Error))?.[0] ?? (typeof reply.ClientId === 'string' && reply.ClientId !== '' ? 'ok' : JSON.stringify(reply));
    };
    const began = Date.now();
    const results: string[] = [];
    for (let i = 0; i < 10; i++) results.push(await attempt(wrongSecret(token)));
    assert.deepEqual(results, Array(10).fill('ERR_NGROK_107'));
    // at once (well within the second a token takes to come back): a good token is refused too,
    // unread, so throttling never tells a guess that it was right
    assert.equal(await attempt(token), 'ERR_NGROK_717');
    for (let i = 0; i < 20; i++) results.push(await attempt(wrongSecret(token)));
    const seconds = (Date.now() - began) / 1000;
    const read = results.filter((r) => r === 'ERR_NGROK_107').length;
    const throttled = results.filter((r) => r === 'ERR_NGROK_717').length;
    assert.equal(read + throttled, 30, results.join(' '));
    // one token back per second: a slow run gets a few more wrong tokens read, never more
    assert.ok(read <= 10 + Math.ceil(seconds), `${read} wrong tokens read in ${seconds} s`);
    assert.ok(throttled >= 10, results.join(' '));

    const refused = await RawAgent.connect(server.plane.agentPort, server.caCert());
    const reply = await refused.auth(token);
    refused.destroy();
    if (reply.Error) assert.match(String(reply.Error), /connection rate limit\.\nToo many failed authentications from your address: try again in \d+ s\.\n\n[^]*ERR_NGROK_717$/);
    const lastOk = reply.Error ? 0 : 1;

    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, new RegExp(`^burrow_agent_auths_total\\{result="ERR_NGROK_107"\\} ${read}$`, 'm'));
    assert.match(metrics, new RegExp(`^burrow_agent_auths_total\\{result="ERR_NGROK_717"\\} ${throttled + 1 + (1 - lastOk)}$`, 'm'));
    assert.match(metrics, new RegExp(`^burrow_agent_auths_total\\{result="ok"\\} ${1 + lastOk}$`, 'm'));
    const logs = server.logs();
    // a line each time the address runs out: the first time, then after each token that came back
    assert.equal(logs.filter((l) => l.event === 'agent_auth_throttled').length, read - 9);
    assert.equal(logs.filter((l) => l.event === 'session_refused').length, read, 'refusals unread leave no line each');

    const started = Date.now();
    const listener = await good.tcpEndpoint().listen(false);
    await listener.close();
    assert.ok(Date.now() - started < 2_000, 'the good session still binds promptly');
    await good.close();
  });
});
