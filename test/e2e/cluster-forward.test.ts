// @test-pass postgres
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { loadOrCreateCa } from '../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../src/tunnels/tls/certificates.js';
import { eventually } from '../helpers/cluster.js';
import { clusterSchema, clusterSkipReason } from '../helpers/cluster-db.js';
import { EDGE_B, startInstancePair, type InstancePair, type PairedInstance } from '../helpers/cluster-pair.js';
import { makeCredential } from '../helpers/data-plane.js';
import { startPlainService, tlsExchange } from '../helpers/plain-service.js';
import { api, cleanupProcesses, makeTempDir, type ServerProcess } from '../helpers/server-process.js';

/**
 * CLUSTER.md §2 end to end: two real instances on one PostgreSQL schema, each on its own
 * EDGE_HOST (127.0.1.1, 127.0.1.2) with identical public ports, one CLUSTER_SECRET, each its
 * CLUSTER_ADDR. An SDK agent holds every kind of endpoint and a labeled tunnel on A; clients reach
 * them all through B, whose link forwards to A. The policy runs once, on B.
 *
 * PostgreSQL is its own (test/helpers/cluster-db.ts): it runs once per CI run, in the PostgreSQL pass.
 */
const skip = await clusterSkipReason('cluster-forward suite');

const HTTP_HOST = 'web.burrow.localhost';
const TLS_HOST = 'secure.burrow.localhost';
const EDGE_NAME = 'edge.example.com';
/** Names an agent moves with from one session to the next (CLUSTER.md §3's route waits). */
const MOVER_HOST = 'mover.burrow.localhost';
const MOVER_TLS_HOST = 'mover-tls.burrow.localhost';
/** A TLS edge terminating at the edge, whose backend's labeled tunnel moves with the agent. */
const MOVER_EDGE = 'mover-edge.example.com';
/** ROUTE_WAIT_WINDOW_MS of both instances: short, so that B is soon past its first moments. */
const WINDOW_MS = 2_000;


const localPort = (server: net.Server) => (server.address() as net.AddressInfo).port;

describe('forwarding between two instances', { skip, timeout: 120_000 }, () => {
  const schema = clusterSchema('fwd');
  const closers: (() => unknown)[] = [];
  let a: PairedInstance;
  let b: PairedInstance;
  let ports: InstancePair['ports'];
  /** When B was up: its first moments (WINDOW_MS) every unrouted name waits. */
  let bUpAt: number;
  let session: ngrok.Session;
  let credentialId: string;
  let localHttp: http.Server;
  let localCa: string;
  let clusterPort: number;
  /** The TCP endpoint's port, held by A: B listens on it too while the endpoint lives. */
  let tcpPort: number;
  /** A local TLS echo server with a certificate of its own CA (burrow's is not it: passthrough shows). */
  let localTlsPort: number;
  /** Headers each request reached the local HTTP server with. */
  const seen: http.IncomingHttpHeaders[] = [];

  before(async () => {
    ({ a, b, ports } = await startInstancePair(schema.url, { ROUTE_WAIT_WINDOW_MS: String(WINDOW_MS) }));
    clusterPort = ports.link;
    bUpAt = Date.now();

    localHttp = http.createServer((req, res) => {
      seen.push(req.headers);
      res.end(`local saw ${req.url}`);
    });
    localHttp.on('upgrade', (_req: http.IncomingMessage, socket: net.Socket) => socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: burrow-test\r\n\r\n'));
    await new Promise<void>((resolve) => localHttp.listen(0, '127.0.0.1', resolve));
    closers.push(() => localHttp.close());
    const cred = await makeCredential(a, []);
    credentialId = cred.id;
    session = await new ngrok.SessionBuilder().authtoken(cred.token).serverAddr(`127.0.0.1:${a.agentPort}`).caCert(a.ca).connect();
    const localCaAuthority = await loadOrCreateCa(makeTempDir('fwd-local-ca-'));
    localCa = localCaAuthority.certPem;
    const leaf = await issueCertificate(localCaAuthority, { dnsNames: [TLS_HOST, EDGE_NAME, MOVER_TLS_HOST] });
    const localTls = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => {
      socket.on('error', () => {});
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => localTls.listen(0, '127.0.0.1', resolve));
    closers.push(() => localTls.close());
    localTlsPort = localPort(localTls);
  });

  after(async () => {
    await session?.close().catch(() => {});
    for (const close of closers) await close();
    await cleanupProcesses();
    await schema.drop();
  });

  function get(edgeHost: string, host: string, path: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: edgeHost, port: ports.http, path, headers: { host }, agent: false, timeout: 5_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
      });
      req.once('error', reject);
      req.once('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
  }

  /** A WebSocket-style upgrade through `edgeHost`'s HTTP port: the status it was answered (101 when switched). */
  function upgrade(edgeHost: string, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: edgeHost, port: ports.http, path: '/ws', headers: { host, connection: 'Upgrade', upgrade: 'burrow-test' }, agent: false, timeout: 5_000 });
      req.once('upgrade', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode!);
      });
      req.once('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.once('error', reject);
      req.once('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
  }

  /** One TLS exchange through B's TLS port: writes `text`, resolves with what came back. */
  function tlsEcho(servername: string, ca: string | Buffer | string[], text: string, plainHttp = false): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: EDGE_B, port: ports.tls, servername, ca, timeout: 5_000 }, () => socket.end(text));
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      // closed with nothing back (no route yet: the port closes it before the handshake) is a failure
      socket.once('end', () => (chunks.length > 0 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error('closed with no answer'))));
      socket.once('error', reject);
      socket.once('timeout', () => socket.destroy(new Error(plainHttp ? 'no answer' : 'timeout')));
    });
  }

  const linesOf = (server: ServerProcess, endpointOrEdge: string) =>
    server.logs().filter((line) => line.event === 'public_connection' && (line.endpoint_id === endpointOrEdge || line.edge_id === endpointOrEdge));

  it('an http endpoint bound on A answers through B within 1 s of the bind, the policy run once, on B', async () => {
    const policy = JSON.stringify({ on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-policy-ran': 'once' } } }] }] });
    const listener = await session.httpEndpoint().domain(HTTP_HOST).scheme('HTTP').policy(policy).listenAndForward(`http://127.0.0.1:${localPort(localHttp)}`);
    const bound = Date.now();
    let answer: { status: number; body: string } | undefined;
    while (Date.now() - bound < 3_000) {
      answer = await get(EDGE_B, HTTP_HOST, '/through-b');
      if (answer.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const elapsed = Date.now() - bound;
    assert.equal(answer?.status, 200, answer?.body);
    assert.equal(answer?.body, 'local saw /through-b');
    assert.ok(elapsed < 1_000, `reachable through B ${elapsed} ms after the bind`);
    assert.equal(seen.at(-1)?.['x-policy-ran'], 'once');
    const endpoints = await api(b, 'GET', '/endpoints');
    const endpoint = (endpoints.body.endpoints as { id: string; public_url: string }[]).find((each) => each.public_url === listener.url());
    assert.ok(endpoint, endpoints.text);
    await new Promise((resolve) => setTimeout(resolve, 300)); // log lines are written at the close
    assert.ok(linesOf(b, endpoint.id).some((line) => line.verdict === 'allowed'), 'B logged the connection');
    assert.equal(linesOf(a, endpoint.id).length, 0, 'A logged no public_connection for it');
  });

  it('an https endpoint, a tcp endpoint and a tls endpoint held on A are reached through B', async () => {
    await session.httpEndpoint().domain(HTTP_HOST.replace('web', 'secure-web')).listenAndForward(`http://127.0.0.1:${localPort(localHttp)}`);
    const httpsAnswer = await eventually(() => tlsEcho(HTTP_HOST.replace('web', 'secure-web'), b.ca, `GET /s HTTP/1.1\r\nhost: ${HTTP_HOST.replace('web', 'secure-web')}\r\nconnection: close\r\n\r\n`, true));
    assert.match(httpsAnswer, /^HTTP\/1\.1 200/);
    assert.match(httpsAnswer, /local saw \/s$/);

    const echo = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    closers.push(() => echo.close());
    const tcp = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${localPort(echo)}`);
    const port = Number(new URL(tcp.url()!).port);
    tcpPort = port;
    const reply = await eventually(
      () =>
        new Promise<string>((resolve, reject) => {
          const socket = net.connect({ host: EDGE_B, port }, () => socket.end('over the hop'));
          const chunks: Buffer[] = [];
          socket.on('data', (chunk: Buffer) => chunks.push(chunk));
          socket.once('end', () => (chunks.length > 0 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error('closed without an answer'))));
          socket.once('error', reject);
        }),
    );
    assert.equal(reply, 'over the hop');

    const tlsListener = await session.tlsEndpoint().domain(TLS_HOST).listenAndForward(`tls://127.0.0.1:${localTlsPort}`);
    assert.ok(tlsListener.url());
    // TLS passed through: the client trusts the local server's certificate, not burrow's
    assert.equal(await eventually(() => tlsEcho(TLS_HOST, localCa, 'passthrough')), 'passthrough');
  });

  it('a TLS edge whose labeled tunnel is on A is reached through B, and round-robins over tunnels of its group on A and B', async () => {
    const group = await api(b, 'POST', '/backends/tunnel_group', { body: { labels: { app: 'fwd' } } });
    assert.equal(group.status, 201, group.text);
    const edge = await api(b, 'POST', '/edges/tls', { body: { hostports: [`${EDGE_NAME}:443`] } });
    assert.equal(edge.status, 201, edge.text);
    assert.equal((await api(b, 'PUT', `/edges/tls/${edge.body.id}/backend`, { body: { backend_id: group.body.id } })).status, 200);
    await session.labeledListener().label('app', 'fwd').listenAndForward(`tls://127.0.0.1:${localTlsPort}`);
    const echoed = await eventually(() => tlsEcho(EDGE_NAME, localCa, 'edge hop'));
    assert.equal(echoed, 'edge hop');

    // a tunnel of the same group held by B: the edge's connections go round-robin over both
    const caOfB = await loadOrCreateCa(makeTempDir('fwd-b-ca-'));
    const leaf = await issueCertificate(caOfB, { dnsNames: [EDGE_NAME] });
    const onB = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => {
      socket.on('error', () => {});
      socket.write('B:');
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => onB.listen(0, '127.0.0.1', resolve));
    closers.push(() => onB.close());
    const cred = await makeCredential(b, []);
    const sessionB = await new ngrok.SessionBuilder().authtoken(cred.token).serverAddr(`127.0.0.1:${b.agentPort}`).caCert(b.ca).connect();
    closers.unshift(() => sessionB.close().catch(() => {}));
    await sessionB.labeledListener().label('app', 'fwd').listenAndForward(`tls://127.0.0.1:${localPort(onB)}`);
    const answers = new Set<string>();
    for (let i = 0; i < 6; i++) answers.add(await tlsEcho(EDGE_NAME, [localCa, caOfB.certPem], 'rr').catch((error: Error) => error.message));
    assert.deepEqual([...answers].sort(), ['B:rr', 'rr']);
  });

  it('the link at CLUSTER_ADDR opens no stream for a stranger: no certificate, or one of another CA', async () => {
    const otherCa = await loadOrCreateCa(makeTempDir('fwd-stranger-'));
    const stranger = await issueCertificate(otherCa, { dnsNames: ['link.cluster.burrow.invalid'], clientAuth: true });
    for (const client of [{}, { cert: stranger.certPem, key: stranger.keyPem }]) {
      const outcome = await new Promise<string>((resolve) => {
        const socket = tls.connect({ host: EDGE_B, port: clusterPort, servername: 'link.cluster.burrow.invalid', ca: b.ca, ...client });
        socket.on('error', () => {});
        // a muxado SYN of a forward stream, then a forward header naming a tunnel held by A
        socket.write(Buffer.from([0, 0, 0, 1, (1 << 4) | 2, 0, 0, 0, 3, 2]));
        socket.on('data', () => resolve('answered'));
        socket.once('close', () => resolve('closed'));
      });
      assert.equal(outcome, 'closed');
    }
  });

  it('past its first moments, B answers an unknown name at once; a name whose agent moves waits for its new route (HTTP, upgrade, TLS passthrough, a TLS edge)', async () => {
    const settled = bUpAt + WINDOW_MS + 500 - Date.now();
    if (settled > 0) await new Promise((resolve) => setTimeout(resolve, settled));
    let asked = Date.now();
    const unknown = await get(EDGE_B, 'nobody.burrow.localhost', '/');
    assert.equal(unknown.status, 404, unknown.body);
    assert.equal(await upgrade(EDGE_B, 'nobody.burrow.localhost'), 404);
    await assert.rejects(tlsEcho('nobody-tls.burrow.localhost', localCa, 'hello?'), /unrecognized name/i);
    const unknownMs = Date.now() - asked;
    console.log(`# an unknown name on B: 404, 404 and the TLS alert in ${unknownMs} ms`);
    assert.ok(unknownMs < 1_000, `answered after ${unknownMs} ms`);

    const plain = await startPlainService();
    closers.push(() => plain.close());
    const group = await api(b, 'POST', '/backends/tunnel_group', { body: { labels: { app: 'mover' } } });
    assert.equal(group.status, 201, group.text);
    const edge = await api(b, 'POST', '/edges/tls', { body: { hostports: [`${MOVER_EDGE}:443`], backend: { backend_id: group.body.id }, tls_termination: { terminate_at: 'edge' } } });
    assert.equal(edge.status, 201, edge.text);
    const edgeEcho = async (text: string) => (await tlsExchange(ports.tls, MOVER_EDGE, text, { host: EDGE_B, ca: b.ca })).echoed;
    const bindOn = async (instance: PairedInstance) => {
      const cred = await makeCredential(instance, []);
      const mover = await new ngrok.SessionBuilder().authtoken(cred.token).serverAddr(`127.0.0.1:${instance.agentPort}`).caCert(instance.ca).connect();
      closers.unshift(() => mover.close().catch(() => {}));
      await mover.httpEndpoint().domain(MOVER_HOST).scheme('HTTP').listenAndForward(`http://127.0.0.1:${localPort(localHttp)}`);
      await mover.tlsEndpoint().domain(MOVER_TLS_HOST).listenAndForward(`tls://127.0.0.1:${localTlsPort}`);
      await mover.labeledListener().label('app', 'mover').listenAndForward(`tcp://127.0.0.1:${plain.port}`);
      return cred.id;
    };
    // the agent is on B first, then moves to A (B's own session ends: A's logs keep to the suite's other tests)
    const first = await bindOn(b);
    assert.equal((await eventually(async () => {
      const answer = await get(EDGE_B, MOVER_HOST, '/before');
      if (answer.status !== 200) throw new Error(`${answer.status} ${answer.body}`);
      return answer;
    })).body, 'local saw /before');
    assert.equal(await eventually(() => tlsEcho(MOVER_TLS_HOST, localCa, 'before')), 'before');
    assert.equal(await eventually(() => edgeEcho('edge before')), 'edge before');
    // the agent leaves B (its session ended: the SDK's close() does not tell the server; its routes
    // are off B's table before the line), and binds its names on A, in a new session, a second
    // after the requests came to B (within WINDOW_MS of the withdrawal)
    const ended = () => b.logs().filter((line) => line.event === 'session_end').length;
    const endedBefore = ended();
    assert.equal((await api(b, 'DELETE', `/credentials/${first}`)).status, 204);
    await eventually(async () => assert.ok(ended() > endedBefore, 'the session on B has not ended'));
    asked = Date.now();
    const moved = Promise.all([get(EDGE_B, MOVER_HOST, '/moved'), upgrade(EDGE_B, MOVER_HOST), tlsEcho(MOVER_TLS_HOST, localCa, 'moved'), edgeEcho('edge moved')]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await bindOn(a);
    const [answer, switched, echoed, edgeEchoed] = await moved;
    const movedMs = Date.now() - asked;
    console.log(`# a moving agent's name on B: served ${movedMs} ms after the request (rebound on A after 1 s)`);
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, 'local saw /moved');
    assert.equal(switched, 101);
    assert.equal(echoed, 'moved');
    assert.equal(edgeEchoed, 'edge moved');
    assert.ok(movedMs >= 1_000, `answered after ${movedMs} ms: before the agent was back`);
  });

  it('revoking the credential through B ends the session held by A within 1 s of the answer; its endpoints leave B, TCP port included', async () => {
    const deleted = await api(b, 'DELETE', `/credentials/${credentialId}`);
    assert.equal(deleted.status, 204);
    const answered = Date.now();
    while (!a.logs().some((line) => line.event === 'session_end') && Date.now() - answered < 3_000) await new Promise((resolve) => setTimeout(resolve, 10));
    const elapsed = Date.now() - answered;
    console.log(`# revocation through B: A ended the session ${elapsed} ms after the DELETE's answer`);
    assert.ok(a.logs().some((line) => line.event === 'session_end'), 'A ended the session');
    assert.ok(elapsed < 1_000, `ended ${elapsed} ms after the DELETE's answer`);
    // and its endpoints are gone from B's routes: B answers as for an unknown host
    let status = 0;
    for (let i = 0; i < 40 && status !== 404; i++) {
      status = (await get(EDGE_B, HTTP_HOST, '/gone')).status;
      if (status !== 404) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status, 404);
    // the TCP endpoint's port closes on B too
    const refused = await eventually(
      () =>
        new Promise<boolean>((resolve, reject) => {
          const socket = net.connect({ host: EDGE_B, port: tcpPort });
          socket.once('connect', () => {
            socket.destroy();
            reject(new Error('B still listens'));
          });
          socket.once('error', () => resolve(true));
        }),
    );
    assert.equal(refused, true);
  });

  it('when the holder dies, a connection routed to it through B fails fast with a 502; the link is dialed again on the next use', async () => {
    const cred = await makeCredential(a, []);
    const own = await new ngrok.SessionBuilder().authtoken(cred.token).serverAddr(`127.0.0.1:${a.agentPort}`).caCert(a.ca).connect();
    closers.unshift(() => own.close().catch(() => {}));
    await own.httpEndpoint().domain('doomed.burrow.localhost').scheme('HTTP').listenAndForward(`http://127.0.0.1:${localPort(localHttp)}`);
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      status = (await get(EDGE_B, 'doomed.burrow.localhost', '/')).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status, 200);
    await a.kill();
    const asked = Date.now();
    const answer = await get(EDGE_B, 'doomed.burrow.localhost', '/after');
    assert.equal(answer.status, 502, answer.body);
    assert.ok(Date.now() - asked < 1_000, `answered after ${Date.now() - asked} ms`);
    const again = await get(EDGE_B, 'doomed.burrow.localhost', '/again');
    assert.equal(again.status, 502, 'still nobody there: refused again, fast');
  });
});
