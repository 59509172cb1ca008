// @test-pass sqlite
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  AgentConnection,
  MAX_HELD_BEFORE_AUTH,
  negotiateVersion,
  type AgentConnectionOptions,
  type AgentHandlers,
  type CloseReason,
} from '../../../src/tunnels/protocol/agent-connection.js';
import { AgentError, AgentErrors } from '../../../src/tunnels/protocol/errors.js';
import { echoBindOpts } from '../../../src/tunnels/protocol/messages.js';
import { MuxErrorCode } from '../../../src/tunnels/protocol/stream-session.js';
import { StreamType } from '../../../src/tunnels/protocol/stream-types.js';
import { agentOpen, delay, nextStream, once, readAll, sessionPair, typeBytes, type FakeSession } from './fake-session.js';

const AUTH_RS = JSON.stringify({ Version: ['3', '2'], ClientId: '', Extra: { AuthToken: 'good', OS: 'linux' } });
const AUTH_GO = JSON.stringify({ Version: ['3', '2'], ClientId: '', Extra: { Authtoken: 'good' } }) + '\n';

const handlers: AgentHandlers = {
  async auth(req) {
    if (req.extra.authToken !== 'good') throw new AgentError(107, 'The authtoken you specified is properly formed, but it is invalid.');
    return { clientId: 'ts_1', extra: { region: 'local' } };
  },
  async bind(req) {
    if (req.options.hostname === 'refused.example.com') throw new AgentError(316, `The credential ACL policy does not permit binding this name.\nCredential ID: cr_1\nName: ${req.options.hostname}`);
    if (req.options.hostname === 'boom') throw new Error('db down: secret details');
    const hostname = req.options.hostname || 'gen.burrow.localhost';
    return { id: 'tn_1', url: `https://${hostname}`, proto: req.proto, opts: echoBindOpts(req.proto, req.opts, { hostname }), token: 'rebind' };
  },
  async unbind() {},
  async startTunnelWithLabel() {
    return { id: 'tn_l' };
  },
};

const conns: AgentConnection[] = [];
function setup(opts: Partial<AgentConnectionOptions> = {}): { server: FakeSession; agent: FakeSession; conn: AgentConnection; closed: Promise<[CloseReason]> } {
  const [server, agent] = sessionPair();
  const conn = new AgentConnection(server, { handlers, heartbeat: false, ...opts });
  conns.push(conn);
  const closed = once<[CloseReason]>(conn, 'close');
  return { server, agent, conn, closed };
}

afterEach(() => {
  for (const c of conns.splice(0)) c.goAwayAndClose();
});

async function rpc(agent: FakeSession, type: number, body: string): Promise<Record<string, unknown>> {
  const s = agentOpen(agent, type, body);
  return JSON.parse((await readAll(s)).toString()) as Record<string, unknown>;
}

async function authed(opts: Partial<AgentConnectionOptions> = {}) {
  const t = setup(opts);
  const resp = await rpc(t.agent, StreamType.Auth, AUTH_RS);
  assert.equal(resp.ClientId, 'ts_1');
  return t;
}

describe('AgentConnection: Auth', () => {
  it('RS-style Auth: exact reply bytes, then FIN', async () => {
    const { agent, conn } = setup();
    const s = agentOpen(agent, StreamType.Auth, AUTH_RS);
    const bytes = await readAll(s);
    assert.equal(
      bytes.toString(),
      '{"Version":"3","ClientId":"ts_1","Extra":{"Version":"","Region":"local","Cookie":"","AccountName":"","SessionDuration":0,"PlanName":"","Banner":""}}',
    );
    assert.equal(s.peer.finSent, true);
    assert.equal(conn.authenticated, true);
    assert.equal(conn.version, '3');
  });

  it('GO-style Auth (Authtoken, trailing newline, split in many writes)', async () => {
    const { agent, conn } = setup();
    const s = agent.open();
    const buf = Buffer.concat([typeBytes(StreamType.Auth), Buffer.from(AUTH_GO)]);
    for (let i = 0; i < buf.length; i += 3) {
      s.write(buf.subarray(i, i + 3));
      await delay(0);
    }
    const resp = JSON.parse((await readAll(s)).toString()) as Record<string, unknown>;
    assert.equal(resp.ClientId, 'ts_1');
    assert.equal(conn.auth?.extra.authToken, 'good');
  });

  it('version: "3" if offered, else "2"; neither → ERR_NGROK_811 and close', async () => {
    assert.equal(negotiateVersion(['2', '3']), '3');
    assert.equal(negotiateVersion(['2']), '2');
    assert.equal(negotiateVersion(['4']), null);
    const a = setup();
    const r = await rpc(a.agent, StreamType.Auth, JSON.stringify({ Version: ['2'], Extra: { AuthToken: 'good' } }));
    assert.equal(r.Version, '2');
    const b = setup({ authErrorLingerMs: 20 });
    const bad = await rpc(b.agent, StreamType.Auth, JSON.stringify({ Version: ['1'], Extra: { AuthToken: 'good' } }));
    assert.match(String(bad.Error), /Could not negotiate a protocol version[^]*\n\nERR_NGROK_811$/);
    assert.deepEqual(await b.closed, ['auth-failed', undefined]);
  });

  it('refused Auth: Error reply, then the connection is closed', async () => {
    const { agent, server, closed } = setup({ authErrorLingerMs: 50 });
    const r = await rpc(agent, StreamType.Auth, JSON.stringify({ Version: ['3'], Extra: { AuthToken: 'bad' } }));
    assert.match(String(r.Error), /properly formed, but it is invalid[^]*\n\nERR_NGROK_107$/);
    assert.equal(r.Version, '');
    assert.deepEqual(await closed, ['auth-failed', undefined]);
    assert.equal(server.closed, true);
  });

  it('malformed Auth JSON → ERR_NGROK_109, closed', async () => {
    const { agent, closed } = setup({ authErrorLingerMs: 20 });
    const r = await rpc(agent, StreamType.Auth, '{"Version":]');
    assert.match(String(r.Error), /authentication payload you specified is not valid[^]*ERR_NGROK_109$/);
    assert.equal((await closed)[0], 'auth-failed');
  });

  it('a second Auth gets an error, the session stays', async () => {
    const { agent, conn } = await authed();
    const r = await rpc(agent, StreamType.Auth, AUTH_RS);
    assert.equal(r.Error, 'this session is already authenticated');
    assert.equal(conn.closed, false);
    assert.equal(conn.authenticated, true);
  });

  it('auth deadline closes the connection with GOAWAY', async () => {
    const { server, closed } = setup({ authTimeoutMs: 40 });
    assert.equal((await closed)[0], 'auth-timeout');
    assert.equal(server.goAways[0]?.code, MuxErrorCode.Protocol);
    assert.equal(server.closed, true);
  });

  it('heartbeats are allowed before Auth and echoed', async () => {
    const { agent, conn } = setup();
    const hb = agentOpen(agent, StreamType.Heartbeat, Buffer.from([1, 2, 3, 4]));
    const echo = await new Promise<Buffer>((resolve) => hb.once('data', resolve));
    assert.deepEqual([...echo], [1, 2, 3, 4]);
    await rpc(agent, StreamType.Auth, AUTH_RS);
    assert.equal(conn.authenticated, true);
  });

  it('a non-RPC stream before Auth closes the connection (RPC requests are held: below)', async () => {
    const { agent, closed, server } = setup();
    const s = agentOpen(agent, StreamType.Proxy, '{}');
    assert.equal((await closed)[0], 'unauthenticated-stream');
    assert.equal(s.receivedReset ?? MuxErrorCode.Protocol, MuxErrorCode.Protocol);
    assert.equal(server.goAways[0]?.code, MuxErrorCode.Protocol);
  });

  it('an unknown stream type before Auth closes the connection too', async () => {
    const { agent, closed } = setup();
    agentOpen(agent, 42, '{}');
    assert.equal((await closed)[0], 'unauthenticated-stream');
  });
});

describe('AgentConnection: requests sent while the Auth is in flight', () => {
  /** Handlers whose Auth answers only when `release` is called. */
  function slowAuth(): { handlers: AgentHandlers; release: () => void } {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    return { handlers: { ...handlers, auth: async (req, ctx) => (await gate, handlers.auth(req, ctx)) }, release };
  }

  it('a Bind opened before the Auth reply is held, then served after the AuthResp (the classic agent does this)', async () => {
    const slow = slowAuth();
    const { agent, conn } = setup({ handlers: slow.handlers });
    const auth = agentOpen(agent, StreamType.Auth, AUTH_GO);
    const bind = agentOpen(agent, StreamType.Bind, JSON.stringify({ Proto: 'https', Opts: {}, Extra: {} }));
    await delay(30);
    assert.equal(conn.closed, false, 'a Bind during the Auth no longer closes the connection');
    const order: string[] = [];
    const authReply = readAll(auth).then((b) => (order.push('auth'), JSON.parse(b.toString())));
    const bindReply = readAll(bind).then((b) => (order.push('bind'), JSON.parse(b.toString())));
    slow.release();
    assert.equal((await authReply).ClientId, 'ts_1');
    assert.equal((await bindReply).URL, 'https://gen.burrow.localhost');
    assert.deepEqual(order, ['auth', 'bind']);
  });

  it('a Bind whose frames arrive before the Auth’s is held too', async () => {
    const { agent, conn } = setup();
    const bind = agentOpen(agent, StreamType.Bind, JSON.stringify({ Proto: 'https', Opts: {}, Extra: {} }));
    await delay(20);
    assert.equal(conn.closed, false);
    const auth = await rpc(agent, StreamType.Auth, AUTH_RS);
    assert.equal(auth.ClientId, 'ts_1');
    assert.equal(JSON.parse((await readAll(bind)).toString()).URL, 'https://gen.burrow.localhost');
  });

  it('a held request waits no longer than the auth deadline', async () => {
    const { agent, closed } = setup({ authTimeoutMs: 40 });
    const bind = agentOpen(agent, StreamType.Bind, '{}');
    const ended = new Promise<void>((resolve) => bind.once('close', () => resolve()));
    assert.equal((await closed)[0], 'auth-timeout');
    await ended;
  });

  it('held requests are refused when that Auth fails, and the connection closes', async () => {
    const slow = slowAuth();
    const { agent, closed } = setup({ handlers: slow.handlers, authErrorLingerMs: 20 });
    const auth = agentOpen(agent, StreamType.Auth, JSON.stringify({ Version: ['3'], Extra: { AuthToken: 'bad' } }));
    const bind = agentOpen(agent, StreamType.Bind, '{}');
    const reset = new Promise<number | undefined>((resolve) => bind.once('close', () => resolve(bind.receivedReset ?? undefined)));
    await delay(20);
    slow.release();
    assert.match(JSON.parse((await readAll(auth)).toString()).Error, /ERR_NGROK_107$/);
    assert.equal(await reset, MuxErrorCode.StreamRefused);
    assert.equal((await closed)[0], 'auth-failed');
  });

  it(`at most ${MAX_HELD_BEFORE_AUTH} are held: one more closes the connection, as before`, async () => {
    const slow = slowAuth();
    const { agent, closed } = setup({ handlers: slow.handlers });
    agentOpen(agent, StreamType.Auth, AUTH_RS);
    for (let i = 0; i <= MAX_HELD_BEFORE_AUTH; i++) agentOpen(agent, StreamType.Bind, '{}');
    assert.equal((await closed)[0], 'unauthenticated-stream');
    slow.release();
  });
});

describe('AgentConnection: RPCs after Auth', () => {
  it('Bind: exact reply, Opts echoed with the hostname, FIN', async () => {
    const { agent } = await authed();
    const s = agentOpen(
      agent,
      StreamType.Bind,
      JSON.stringify({ Id: '', Proto: 'https', ForwardsTo: 'x', Opts: { Hostname: '', Subdomain: '', Auth: '', HostHeaderRewrite: false, ProxyProto: 0 }, Extra: { Token: '' } }),
    );
    const bytes = (await readAll(s)).toString();
    assert.equal(
      bytes,
      '{"Id":"tn_1","URL":"https://gen.burrow.localhost","Proto":"https","Opts":{"Hostname":"gen.burrow.localhost","Subdomain":"","Auth":"","HostHeaderRewrite":false,"ProxyProto":0},"Extra":{"Token":"rebind","TunnelID":"tn_1"}}',
    );
  });

  it('Bind refused with AgentError: Error text + the other fields', async () => {
    const { agent, conn } = await authed();
    const r = await rpc(agent, StreamType.Bind, JSON.stringify({ Id: 'tn_x', Proto: 'tls', Opts: { Hostname: 'refused.example.com' } }));
    assert.equal(
      r.Error,
      'The credential ACL policy does not permit binding this name.\nCredential ID: cr_1\nName: refused.example.com\n\nERR_NGROK_316',
    );
    assert.equal(r.Id, 'tn_x');
    assert.equal(r.Proto, 'tls');
    assert.deepEqual(r.Extra, { Token: '' });
    assert.equal(conn.closed, false);
  });

  it('a handler bug is answered without leaking details and reported', async () => {
    const { agent, conn } = await authed();
    const reported = once<[Error, string]>(conn, 'handlerError');
    const r = await rpc(agent, StreamType.Bind, JSON.stringify({ Proto: 'http', Opts: { Hostname: 'boom' } }));
    assert.equal(r.Error, 'internal server error while handling Bind');
    assert.match((await reported)[0].message, /db down/);
  });

  it('Unbind (twice), StartTunnelWithLabel, SrvInfo default, PatchTunnelState refused', async () => {
    const { agent } = await authed({ region: 'local' });
    assert.deepEqual(await rpc(agent, StreamType.Unbind, '{"Id":"tn_1"}'), {});
    assert.deepEqual(await rpc(agent, StreamType.Unbind, '{"Id":"tn_1"}'), {});
    assert.deepEqual(await rpc(agent, StreamType.StartTunnelWithLabel, '{"Labels":{"edge":"e"}}'), { Id: 'tn_l' });
    assert.deepEqual(await rpc(agent, StreamType.SrvInfo, '{}\n'), { Region: 'local' });
    const p = await rpc(agent, StreamType.PatchTunnelState, '{"TunnelId":"tn_1"}');
    assert.match(String(p.Error), /PatchTunnelState[^]*ERR_NGROK_813$/);
  });

  it('malformed, non-object, truncated and two-value requests get an Error reply; the session stays', async () => {
    const { agent, conn } = await authed();
    for (const body of ['{"Id":}', '[1,2]', '"x"', '{"Id":"a"}{"Id":"b"}', '{"Opts":{"ProxyProto":"x"}}']) {
      const r = await rpc(agent, StreamType.Bind, body);
      assert.match(String(r.Error), /^The bind payload you specified is not valid\.\ninvalid Bind request: [^]*\n\nERR_NGROK_301$/, body);
    }
    // a labeled bind is a bind: the same code; other requests have none documented
    assert.match(String((await rpc(agent, StreamType.StartTunnelWithLabel, '[1]')).Error), /^The bind payload[^]*invalid StartTunnelWithLabel request: [^]*\n\nERR_NGROK_301$/);
    const s = agentOpen(agent, StreamType.Unbind, '{"Id":');
    s.end();
    const r = JSON.parse((await readAll(s)).toString()) as { Error: string };
    assert.match(r.Error, /stream ended inside the JSON value/);
    assert.equal(conn.closed, false);
  });

  it('oversized request: Error reply + FIN, then RST FrameSize; the session stays', async () => {
    const { agent, conn } = await authed({ maxRpcBytes: 1000 });
    const s = agentOpen(agent, StreamType.Bind, `{"Id":"${'x'.repeat(2000)}`);
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    await once(s, 'close');
    assert.match(JSON.parse(Buffer.concat(got).toString()).Error, /larger than 1000 bytes/);
    assert.equal(s.receivedReset, MuxErrorCode.FrameSize);
    assert.equal(conn.closed, false);
  });

  it('request read deadline: Error reply, then RST StreamCancelled', async () => {
    const { agent } = await authed({ rpcReadTimeoutMs: 40 });
    const s = agentOpen(agent, StreamType.Bind, '{"Id":');
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    await once(s, 'close');
    assert.match(JSON.parse(Buffer.concat(got).toString()).Error, /deadline/);
    assert.equal(s.receivedReset, MuxErrorCode.StreamCancelled);
  });

  it('unknown and server-only stream types after Auth are refused with RST StreamRefused', async () => {
    const { agent, conn } = await authed();
    for (const t of [StreamType.Proxy, StreamType.Stop, StreamType.StopTunnel, 11, 0x7fffffff]) {
      const s = agentOpen(agent, t, '{}');
      await once(s, 'close');
      assert.equal(s.receivedReset, MuxErrorCode.StreamRefused, String(t));
    }
    assert.equal(conn.closed, false);
  });

  it('a stream whose type never arrives is cancelled', async () => {
    const { agent } = await authed({ streamTypeTimeoutMs: 30 });
    const s = agent.open();
    s.on('error', () => {});
    s.write(Buffer.from([0, 0]));
    await once(s, 'close');
    assert.equal(s.receivedReset, MuxErrorCode.StreamCancelled);
  });

  it('agent GOAWAY is terminal; session close is reported', async () => {
    const a = await authed();
    a.agent.goAway(0, 'bye');
    assert.equal((await a.closed)[0], 'agent-goaway');
    const b = await authed();
    b.agent.close();
    assert.equal((await b.closed)[0], 'transport');
  });

  it('goAwayAndClose sends GOAWAY code 0 "no error"', async () => {
    const { server, conn, closed } = await authed();
    conn.goAwayAndClose();
    assert.equal((await closed)[0], 'server');
    assert.deepEqual(server.goAways, [{ code: 0, debug: 'no error' }]);
  });
});

describe('AgentConnection: server → agent', () => {
  it('openProxy needs Auth; counts open streams', async () => {
    const pre = setup();
    assert.throws(() => pre.conn.openProxy({ id: 'a', clientAddr: 'b', proto: 'tcp', edgeType: '1', passthroughTls: false }));
    const { agent, conn } = await authed();
    const incoming = nextStream(agent);
    const s = conn.openProxy({ id: 'tn_1', clientAddr: '1.2.3.4:5', proto: 'tcp', edgeType: '1', passthroughTls: false });
    assert.equal(conn.proxyStreamsOpen, 1);
    const a = await incoming;
    a.end();
    s.resume();
    s.end();
    await once(s, 'close');
    assert.equal(conn.proxyStreamsOpen, 0);
  });

  it('stopTunnel only on protocol 3', async () => {
    const { agent, conn } = await authed();
    const incoming = nextStream(agent);
    const p = conn.stopTunnel('tn_1', 'ACL changed', 316);
    const a = await incoming;
    const body = (await readAll(a)).toString();
    assert.equal(body, '\u0000\u0000\u0000\t{"Id":"tn_1","Message":"ACL changed","ErrorCode":"ERR_NGROK_316"}');
    a.end();
    assert.deepEqual(await p, { status: 'no-reply', reason: 'eof' });

    const [server2, agent2] = sessionPair();
    const v2 = new AgentConnection(server2, { handlers, heartbeat: false });
    conns.push(v2);
    await rpc(agent2, StreamType.Auth, JSON.stringify({ Version: ['2'], Extra: { AuthToken: 'good' } }));
    await assert.rejects(v2.stopTunnel('tn_1', 'x', 1), /version 3/);
  });

  it('commandSupport reads the Auth capability fields', async () => {
    const { agent, conn } = setup();
    await rpc(
      agent,
      StreamType.Auth,
      JSON.stringify({ Version: ['3'], Extra: { AuthToken: 'good', StopUnsupportedError: '', RestartUnsupportedError: 'service mode', UpdateUnsupportedError: null } }),
    );
    assert.deepEqual(conn.commandSupport('stop'), { supported: true });
    assert.deepEqual(conn.commandSupport('restart'), { supported: false, reason: 'service mode' });
    assert.deepEqual(conn.commandSupport('update'), { supported: false, reason: null });
  });

  it('server heartbeat timeout closes the session', async () => {
    const { agent, closed } = setup({ heartbeat: { intervalMs: 20, toleranceMs: 40 } });
    const hbStream = nextStream(agent);
    await rpc(agent, StreamType.Auth, AUTH_RS);
    // The agent accepts the heartbeat stream but never echoes.
    const hb = await hbStream;
    const first = await new Promise<Buffer>((resolve) => hb.once('data', resolve));
    assert.equal(first.readUInt32BE(0), StreamType.Heartbeat);
    assert.equal(first.length, 8, 'type and first beat in one write');
    assert.equal((await closed)[0], 'heartbeat-timeout');
  });

  it('an AgentError code from elsewhere (policy 2230-ish) passes through', async () => {
    const h: AgentHandlers = { ...handlers, bind: async () => { throw new AgentError(2230, 'policy refused'); } };
    const { agent } = await authed({ handlers: h });
    const r = await rpc(agent, StreamType.Bind, '{"Proto":"http"}');
    assert.equal(r.Error, 'policy refused\n\nERR_NGROK_2230');
  });
});
