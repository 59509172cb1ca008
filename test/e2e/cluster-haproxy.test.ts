// @test-pass postgres
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import type tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { clusterUnavailable, get, startCluster, startEchoService, type Answer, type Cluster, type Instance } from '../helpers/cluster.js';
import { makeCredential, waitFor } from '../helpers/data-plane.js';
import { startPlainService, tlsExchange } from '../helpers/plain-service.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';
import { spawnAgent, type TrafficServer } from '../helpers/traffic.js';

/**
 * CLUSTER.md §4: three real instances on one PostgreSQL schema (127.0.1.1–3, identical ports),
 * Debian's HAProxy in front with README.md's configuration, official SDK agents through it.
 * PostgreSQL is reached on its own (not TEST_DATABASE_URL), so the suite runs once per CI run, on
 * the PostgreSQL pass. Every instance serves every endpoint (forwarding to the holder, CLUSTER.md §2).
 */
const unavailable = await clusterUnavailable();

describe('three instances behind HAProxy (README configuration)', { skip: unavailable || false, timeout: 170_000 }, () => {
  let cluster: Cluster;
  let echo: Awaited<ReturnType<typeof startEchoService>>;
  let plain: Awaited<ReturnType<typeof startPlainService>>;
  let token: string;
  let credentialId: string;
  let session: ngrok.Session;
  const sessions: ngrok.Session[] = [];
  const host = (name: string) => `${name}.burrow.localhost`;

  /** An SDK session through the balancer. */
  const connect = async (authtoken: string) => {
    const connected = await new ngrok.SessionBuilder().authtoken(authtoken).serverAddr(`127.0.0.1:${cluster.ports.agent}`).caCert(readFileSync(cluster.caPath)).connect();
    sessions.push(connected);
    return connected;
  };

  /** The instance whose latest session_start for the credential has no session_end after it. */
  const holderOf = (credential: string): Instance | undefined => {
    let best: { instance: Instance; time: number } | undefined;
    for (const instance of cluster.instances) {
      if (instance.server.child.exitCode !== null || instance.server.child.signalCode !== null) continue;
      const logs = instance.server.logs();
      const start = logs.filter((line) => line.event === 'session_start' && line.credential_id === credential).at(-1);
      if (!start) continue;
      const ended = logs.some((line) => line.event === 'session_end' && line.session_id === start.session_id && Date.parse(String(line.time)) >= Date.parse(String(start.time)));
      if (!ended && (!best || Date.parse(String(start.time)) > best.time)) best = { instance, time: Date.parse(String(start.time)) };
    }
    return best?.instance;
  };
  const direct = (instance: Instance, name: string, path = '/') => get(instance.host, cluster.ports.http, host(name), path);
  const balanced = (name: string, path = '/', localAddress = '127.0.0.2') => get('127.0.0.1', cluster.ports.http, host(name), path, { localAddress });

  before(async () => {
    cluster = await startCluster();
    echo = await startEchoService();
    plain = await startPlainService();
    ({ token, id: credentialId } = await makeCredential(cluster.instances[0]!.server, []));
    session = await connect(token);
    await session.httpEndpoint().scheme('HTTP').domain(host('app')).listenAndForward(`http://127.0.0.1:${echo.port}`);
    await session.httpEndpoint().domain(host('secure')).listenAndForward(`http://127.0.0.1:${echo.port}`);
    await session
      .httpEndpoint()
      .scheme('HTTP')
      .domain(host('policy'))
      .trafficPolicy(JSON.stringify({ on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-policy': 'ran' } } }] }] }))
      .listenAndForward(`http://127.0.0.1:${echo.port}`);
    const tcp = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${plain.port}`);
    tcpUrl = tcp.url()!;
    // a TLS edge terminating at the edge, its backend a labeled tunnel of the session
    await session.labeledListener().label('edge', 'cluster').listenAndForward(`tcp://127.0.0.1:${plain.port}`);
    const first = cluster.instances[0]!.server;
    const group = await api(first, 'POST', '/backends/tunnel_group', { body: { labels: { edge: 'cluster' } } });
    const edge = await api(first, 'POST', '/edges/tls', { body: { hostports: [`${host('edge')}:443`], backend: { backend_id: group.body.id }, tls_termination: { terminate_at: 'edge' } } });
    assert.equal(edge.status, 201, edge.text);
    const holder = holderOf(credentialId)!;
    const other = cluster.instances.find((instance) => instance !== holder)!;
    await waitFor('the endpoint served by its holder', async () => (await direct(holder, 'app')).status === 200);
    await waitFor('the endpoint served by another instance', async () => (await direct(other, 'app')).status === 200);
  });
  let tcpUrl = '';

  after(async () => {
    for (const each of sessions) await each.close().catch(() => {});
    await cleanupProcesses();
    await cluster?.close();
    await echo?.close();
    await plain?.close();
  });

  /** A TLS client of the edge's hostport at `address`, trusting the cluster CA. */
  const viaEdge = (address: string) => tlsExchange(cluster.ports.tls, host('edge'), 'hello', { host: address, ca: readFileSync(cluster.caPath), ...({ localAddress: '127.0.0.2' } as tls.ConnectionOptions) });


  it('HAProxy runs the README configuration; the SDK agent connects through it', () => {
    assert.match(cluster.haproxyConfig, /option redispatch/);
    assert.match(cluster.haproxyConfig, /send-proxy-v2/);
    assert.ok(holderOf(credentialId), 'one instance holds the session');
  });

  it('http, https and tcp endpoints and a TLS edge answer through the holding instance, and the client address comes through PROXY v2', async () => {
    const holder = holderOf(credentialId)!;
    assert.equal((await direct(holder, 'app', '/x')).body, `served /x xff=127.0.0.2`);
    // through the balancer from 127.0.0.3: the address the PROXY header carries, not HAProxy's
    const answer = await waitFor('an answer through the balancer', async () => {
      const through = await balanced('app', '/y', '127.0.0.3');
      return through.status === 200 ? through : undefined;
    });
    assert.equal(answer.body, 'served /y xff=127.0.0.3');
    const secure = await httpsGet(holder.host, cluster.ports.tls, host('secure'), readFileSync(cluster.caPath));
    assert.equal(secure.status, 200);
    const port = Number(new URL(tcpUrl.replace('tcp:', 'http:')).port);
    assert.equal(await tcpGreeting(holder.host, port), 'plain');
    assert.equal((await viaEdge(holder.host)).greeting, 'plain');
  });

  it('every endpoint answers through every instance and through the balancer', async () => {
    const port = Number(new URL(tcpUrl.replace('tcp:', 'http:')).port);
    for (const instance of cluster.instances) {
      assert.equal((await direct(instance, 'app')).status, 200, `http through ${instance.host}`);
      assert.equal((await httpsGet(instance.host, cluster.ports.tls, host('secure'), readFileSync(cluster.caPath))).status, 200, `https through ${instance.host}`);
      assert.equal(await tcpGreeting(instance.host, port), 'plain', `tcp through ${instance.host}`);
      assert.equal((await viaEdge(instance.host)).greeting, 'plain', `the TLS edge through ${instance.host}`);
    }
    for (let i = 0; i < 6; i++) assert.equal((await balanced('app')).status, 200);
  });

  it('the traffic policy runs once per request: one line with its action across the three instances', async () => {
    const path = `/once-${Date.now()}`;
    for (let i = 0; i < 6; i++) assert.equal((await balanced('policy', path)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = cluster.instances.flatMap((instance) => instance.server.logs().filter((line) => line.event === 'http_request' && line.path === path));
    assert.equal(lines.length, 6);
    assert.ok(lines.every((line) => Array.isArray(line.policy_actions)));
  });

  it('a credential deleted through one instance closes its session on another within 1 s', async () => {
    const revoked = await makeCredential(cluster.instances[0]!.server, []);
    await connect(revoked.token);
    const holder = await waitFor('the session held', () => holderOf(revoked.id));
    const sessionId = holder.server.logs().find((line) => line.event === 'session_start' && line.credential_id === revoked.id)!.session_id;
    const other = cluster.instances.find((instance) => instance !== holder)!;
    assert.equal((await api(other.server, 'DELETE', `/credentials/${revoked.id}`)).status, 204);
    const answeredAt = Date.now();
    const end = await waitFor('session_end', () => holder.server.logs().find((line) => line.event === 'session_end' && line.session_id === sessionId), 3_000);
    const took = Date.parse(String(end.time)) - answeredAt;
    console.log(`cluster-haproxy: revocation closed the session on ${holder.host} ${took} ms after the DELETE's answer on ${other.host}`);
    assert.ok(took <= 1_000, `took ${took} ms`);
  });

  it('SIGTERM drains: /readyz 503 first, in-flight requests finish, the agent moves to another instance, the process exits 0', async () => {
    const holder = holderOf(credentialId)!;
    const slow = direct(holder, 'app', '/slow');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const exited = holder.server.stop('SIGTERM');
    const ready = await waitFor('/readyz 503', async () => {
      const answer = await get(holder.host, cluster.ports.api, 'localhost', '/readyz').catch(() => undefined);
      return answer && answer.status === 503 ? answer : undefined;
    }, 2_000);
    assert.match(ready.body, /shutting down/);
    const inFlight = await slow;
    assert.equal(inFlight.status, 200);
    assert.equal(inFlight.body, 'served /slow xff=127.0.0.2');
    const moved = await waitFor('the session on another instance', () => {
      const now = holderOf(credentialId);
      return now && now !== holder ? now : undefined;
    }, 8_000);
    await waitFor('its endpoint bound there again', async () => (await direct(moved, 'app')).status === 200, 5_000);
    assert.equal((await exited).code, 0);
    await cluster.restart(holder);
  });

  it('SIGKILL of the holder: the SDK reconnects through HAProxy and the URL answers again within 10 s', async () => {
    const holder = holderOf(credentialId)!;
    const killedAt = Date.now();
    await holder.server.kill();
    // six requests in a row through the balancer, the first within 10 s
    let streak = 0;
    let firstOfStreak = 0;
    await waitFor('six in a row', async () => {
      const answer = await balanced('app').catch(() => undefined);
      if (answer?.status === 200) {
        if (streak++ === 0) firstOfStreak = Date.now();
      } else streak = 0;
      return streak >= 6;
    }, 15_000);
    const back = firstOfStreak - killedAt;
    console.log(`cluster-haproxy: URL back ${back} ms after SIGKILL of ${holder.host} (six in a row through HAProxy)`);
    assert.ok(back <= 10_000, `back after ${back} ms`);
    await cluster.restart(holder);
  });

  it("an agent started again after its instance died binds that instance's name and port at once (claims released, not swept)", async () => {
    const agentAt = { agentPort: cluster.ports.agent, caPath: cluster.caPath } as TrafficServer;
    const crashed = await makeCredential(cluster.instances[0]!.server, []);
    // a port of the range that the first session's random tcp endpoint does not hold (same account: 334)
    const taken = Number(new URL(tcpUrl.replace('tcp:', 'http:')).port);
    const port = taken === cluster.ports.tcp.last ? cluster.ports.tcp.first : cluster.ports.tcp.last;
    const endpoints = [
      { kind: 'https' as const, forward: `http://127.0.0.1:${echo.port}`, domain: host('crash') },
      { kind: 'tcp' as const, forward: `tcp://127.0.0.1:${plain.port}`, remoteAddr: `127.0.0.1:${port}` },
    ];
    const first = await spawnAgent(agentAt, crashed.token, endpoints);
    const holder = await waitFor('the session held', () => holderOf(crashed.id));
    // frozen first, so it cannot reconnect elsewhere while its instance dies: the rows stay behind
    first.child.kill('SIGSTOP');
    await holder.server.kill();
    await first.kill();
    const killedAt = Date.now();
    const second = await spawnAgent(agentAt, crashed.token, endpoints);
    const took = Date.now() - killedAt;
    console.log(`cluster-haproxy: a new agent bound the dead instance's name and port ${took} ms after the kill`);
    assert.deepEqual(second.urls, first.urls);
    assert.ok(took <= 10_000, `took ${took} ms`);
    const now = await waitFor('the new session held', () => holderOf(crashed.id));
    assert.equal(await tcpGreeting(now.host, port), 'plain');
    await second.kill();
    await cluster.restart(holder);
  });

  it('a rolling restart of all three under steady load loses no request (retrying only refused or unanswered connections)', async () => {
    let stop = false;
    let served = 0;
    const lost: string[] = [];
    const load = (async () => {
      while (!stop) {
        for (let attempt = 0; ; attempt++) {
          const answer: Answer | Error = await balanced('app', '/load').catch((error: Error) => error);
          if (!(answer instanceof Error)) {
            if (answer.status === 200) served++;
            else lost.push(`status ${answer.status}`);
            break;
          }
          const code = (answer as NodeJS.ErrnoException).code;
          // refused, or closed or reset before any byte of the answer: may be retried
          if ((code === 'ECONNREFUSED' || code === 'ECONNRESET' || answer.message === 'socket hang up') && attempt < 20) continue;
          lost.push(`${code ?? answer.message}`);
          break;
        }
      }
    })();
    for (const instance of cluster.instances) {
      assert.equal((await instance.server.stop('SIGTERM')).code, 0);
      await cluster.restart(instance);
      // back in the balancer: two good health checks
      await new Promise((resolve) => setTimeout(resolve, 2_500));
    }
    stop = true;
    await load;
    console.log(`cluster-haproxy: rolling restart, ${served} requests served, ${lost.length} lost`);
    assert.deepEqual(lost, []);
    assert.ok(served > 50);
  });
});

function httpsGet(address: string, port: number, servername: string, ca: Buffer): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const request = https.request({ host: address, port, servername, ca, headers: { host: servername }, localAddress: '127.0.0.2', agent: false, timeout: 5_000 }, (response) => {
      response.resume();
      response.once('end', () => resolve({ status: response.statusCode ?? 0 }));
    });
    request.once('error', reject);
    request.once('timeout', () => request.destroy(new Error('timeout')));
    request.end();
  });
}

/** The first line the TCP endpoint's service sends. */
function tcpGreeting(address: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address, port, localAddress: '127.0.0.2' });
    let buffered = '';
    socket.setTimeout(5_000, () => socket.destroy(new Error('timeout')));
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      if (buffered.includes('\n')) {
        resolve(buffered.slice(0, buffered.indexOf('\n')));
        socket.destroy();
      }
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('closed before a greeting')));
  });
}
