import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ngrokAgent from '@ngrok/ngrok';
import { Ngrok } from '@ngrok/ngrok-api';
import { freePorts } from '../helpers/data-plane.js';
import { apiError, rejection, within } from '../helpers/ngrok-client.js';
import { cleanupProcesses, makeTempDir, startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * The live objects through the official clients on both sides: a real `burrow serve` with its
 * data plane on, real `@ngrok/ngrok` 1.7.0 agents connected to it, and `@ngrok/ngrok-api`
 * 0.11.0 listing what they hold and sending session commands (TUNNELS.md §2–§3).
 */

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

let server: ServerProcess;
let api: Ngrok;
let token: string;
let credentialId: string;
let caCert: Buffer;
let agentAddr: string;
const sessions: ngrokAgent.Session[] = [];

before(async () => {
  const tlsDir = makeTempDir('burrow-tls-');
  const [agentPort, httpPort, tlsPort, tcpPort] = (await freePorts(4)) as [number, number, number, number];
  server = await startServer({
    env: {
      AGENT_PORT: String(agentPort),
      EDGE_HTTP_PORT: String(httpPort),
      EDGE_TLS_PORT: String(tlsPort),
      EDGE_TCP_PORTS: String(tcpPort),
      TLS_DIR: tlsDir,
      REGION: 'test-1',
    },
  });
  api = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
  const credential = await api.credentials.create({ description: 'live objects e2e', acl: [] });
  token = credential.token!;
  credentialId = credential.id;
  caCert = readFileSync(join(tlsDir, 'ca.pem'));
  agentAddr = `localhost:${agentPort}`;
});

after(async () => {
  await Promise.allSettled(sessions.map((session) => session.close()));
  await cleanupProcesses();
});

function builder(): ngrokAgent.SessionBuilder {
  return new ngrokAgent.SessionBuilder().authtoken(token).serverAddr(agentAddr).caCert(caCert);
}

async function connect(configure: (b: ngrokAgent.SessionBuilder) => ngrokAgent.SessionBuilder = (b) => b): Promise<ngrokAgent.Session> {
  const session = await within(15_000, configure(builder()).connect(), 'the agent connecting');
  sessions.push(session);
  return session;
}

/**
 * A 204 through the client: it parses the empty body as JSON, so it rejects with that
 * SyntaxError (or, in a fixed client, resolves). An API error object is a real failure.
 */
async function noContent(promise: Promise<unknown>, what: string): Promise<void> {
  try {
    await within(5000, promise, what);
  } catch (error) {
    assert.ok(error instanceof SyntaxError, `${what} failed: ${JSON.stringify(error)}`);
  }
}

/** Tunnels are listed within 1 s of their bind (TUNNELS.md §2); a little slack for CI. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) assert.fail(`${what} did not appear within 3 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('live objects through @ngrok/ngrok-api, held by @ngrok/ngrok agents', () => {
  let plain: ngrokAgent.Session;
  let http: ngrokAgent.Listener;
  let tcp: ngrokAgent.Listener;
  let labeled: ngrokAgent.Listener;
  let sessionId: string;

  before(async () => {
    plain = await connect((b) => b.metadata('agent of the e2e'));
    http = await within(15_000, plain.httpEndpoint().metadata('web').listenAndForward('http://127.0.0.1:9'), 'the http bind');
    tcp = await within(15_000, plain.tcpEndpoint().listenAndForward('tcp://127.0.0.1:9'), 'the tcp bind');
    labeled = await within(15_000, plain.labeledListener().label('env', 'e2e').listenAndForward('http://127.0.0.1:9'), 'the labeled tunnel');
  });

  it('lists every tunnel, with listener.url() as its public_url', async () => {
    const tunnels = await eventually('the three tunnels', async () => {
      const listed = await api.tunnels.list();
      return [http, tcp, labeled].every((listener) => listed.some((tunnel) => tunnel.id === listener.id())) ? listed : undefined;
    });
    const byId = new Map(tunnels.map((tunnel) => [tunnel.id, tunnel]));
    for (const listener of [http, tcp]) {
      const tunnel = byId.get(listener.id())!;
      assert.equal(tunnel.publicUrl, listener.url());
      assert.equal(tunnel.proto, listener.proto());
      assert.equal(tunnel.forwardsTo, listener.forwardsTo());
      assert.equal(tunnel.region, 'test-1');
      assert.match(String(tunnel.startedAt), TIMESTAMP);
      assert.match(tunnel.endpoint!.id, /^ep_/);
      assert.equal(tunnel.endpoint!.uri, `${server.baseUrl}/endpoints/${tunnel.endpoint!.id}`);
    }
    assert.equal(byId.get(http.id())!.metadata, 'web');
    const label = byId.get(labeled.id())!;
    assert.equal(label.publicUrl, undefined);
    assert.equal(label.endpoint, undefined);
    assert.deepEqual(label.labels, { env: 'e2e' });

    sessionId = byId.get(http.id())!.tunnelSession.id;
    for (const listener of [tcp, labeled]) assert.equal(byId.get(listener.id())!.tunnelSession.id, sessionId);
    assert.equal((await api.tunnels.get(tcp.id())).publicUrl, tcp.url());
  });

  it('lists and gets the session', async () => {
    const listed = await api.tunnelSessions.list();
    const session = listed.find((s) => s.id === sessionId);
    assert.ok(session, 'the session is listed');
    const got = await api.tunnelSessions.get(sessionId);
    assert.deepEqual(got, session);
    assert.equal(got.uri, `${server.baseUrl}/tunnel_sessions/${sessionId}`);
    assert.deepEqual(got.credential, { id: credentialId, uri: `${server.baseUrl}/credentials/${credentialId}` });
    assert.equal(got.metadata, 'agent of the e2e');
    assert.equal(got.transport, 'ngrok/2');
    assert.equal(got.region, 'test-1');
    assert.match(got.ip, /^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/);
    assert.ok(got.agentVersion.length > 0);
    assert.ok(got.os.length > 0);
    assert.match(String(got.startedAt), TIMESTAMP);
  });

  it('lists and gets the endpoints of the binds', async () => {
    const endpoints = await api.endpoints.list();
    for (const listener of [http, tcp]) {
      const endpoint = endpoints.find((e) => e.publicUrl === listener.url());
      assert.ok(endpoint, `an endpoint for ${listener.url()}`);
      assert.equal(endpoint.type, 'ephemeral');
      assert.equal(endpoint.tunnel!.id, listener.id());
      assert.equal(endpoint.proto, listener.proto());
      const got = await api.endpoints.get(endpoint.id);
      assert.deepEqual(got, endpoint);
      const url = new URL(listener.url()!);
      assert.equal(got.hostport, `${url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 80)}`);
    }
    // Not in the client's Endpoint type, but passed through camel-cased.
    const ofSession = endpoints.filter((e) => (e as unknown as { tunnelSession: { id: string } }).tunnelSession.id === sessionId);
    assert.equal(ofSession.length, 2);
  });

  it('stop and restart: 400 ERR_NGROK_805 / 804 with the SDK’s reason when no handler is registered', async () => {
    const stop = apiError(await rejection(api.tunnelSessions.stop(sessionId)), 400);
    assert.equal(stop.errorCode, 'ERR_NGROK_805');
    // The SDK's StopUnsupportedError when the app registered no stop handler.
    assert.equal(stop.msg, 'This ngrok agent does not support remote stopping: the agent has not defined a callback for this operation.');
    const restart = apiError(await rejection(api.tunnelSessions.restart(sessionId)), 400);
    assert.equal(restart.errorCode, 'ERR_NGROK_804');
    assert.equal(restart.msg, 'This ngrok agent does not support remote restarting: the agent has not defined a callback for this operation.');
    // The session is untouched.
    assert.equal((await api.tunnelSessions.get(sessionId)).id, sessionId);
  });

  it('unknown session: 404 through the client', async () => {
    apiError(await rejection(api.tunnelSessions.get('ts_2zzzzzzzzzzzzzzzzzzzzzzzzzz')), 404);
    apiError(await rejection(api.tunnelSessions.stop('ts_nope')), 404);
    apiError(await rejection(api.endpoints.get('ep_nope')), 404);
    apiError(await rejection(api.tunnels.get('tn_nope')), 404);
  });
});

describe('session commands reach an agent that handles them', () => {
  it('restart then stop: 204 through the client, and the agent’s handlers run', async () => {
    let restarted = 0;
    let stopped = 0;
    const session = await connect((b) =>
      b
        .metadata('handles commands')
        .handleRestartCommand(() => {
          restarted++;
        })
        .handleStopCommand(() => {
          stopped++;
          void session.close(); // else the SDK reconnects when burrow ends the stopped session
        }),
    );
    const listener = await within(15_000, session.httpEndpoint().listenAndForward('http://127.0.0.1:9'), 'the http bind');
    const tunnel = await eventually('the tunnel', async () => (await api.tunnels.list()).find((t) => t.id === listener.id()));
    const id = tunnel.tunnelSession.id;

    await noContent(api.tunnelSessions.restart(id), 'restart');
    await eventually('the restart handler', async () => (restarted === 1 ? true : undefined));
    // update: the SDK never says it can update, so it is refused without reaching the agent.
    const update = apiError(await rejection(api.tunnelSessions.update({ id })), 400);
    assert.equal(update.errorCode, 'ERR_NGROK_806');
    await noContent(api.tunnelSessions.stop(id), 'stop');
    await eventually('the stop handler', async () => (stopped === 1 ? true : undefined));
    // an acknowledged Stop ends the session (the SDK's close() would tell burrow nothing)
    await eventually('the stopped session to be gone', async () => ((await api.tunnelSessions.list()).every((s) => s.id !== id) ? true : undefined));
  });
});
