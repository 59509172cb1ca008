// @test-pass postgres
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import type https from 'node:https';
import type net from 'node:net';
import type tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import pg from 'pg';
import type { IssuedCertificate } from '../../src/tunnels/tls/certificates.js';
import { eventually } from '../helpers/cluster.js';
import { clusterDatabase, clusterSchema, clusterSkipReason } from '../helpers/cluster-db.js';
import { EDGE_B, startInstancePair, type PairedInstance } from '../helpers/cluster-pair.js';
import { makeCredential } from '../helpers/data-plane.js';
import { httpsGet, makeEdgeTlsCertificates, startHelloService, TLS_HEADERS_POLICY } from '../helpers/edge-tls.js';
import { startPlainService, tlsExchange, type PlainService } from '../helpers/plain-service.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';

/**
 * The edge TLS options of a bind (HTTP-POLICY.md §4) and a TLS edge's TLS (§5) honoured by the
 * instance that does not hold the agent (CLUSTER.md §2): an SDK agent on A, every client through
 * B. B asks for and checks client certificates as A would, terminates with the agent's own
 * certificate (its key came over the link), and fills conn.tls.* for the policy it runs. The
 * agent's key is in no log line of either instance and in no database row.
 *
 * PostgreSQL is its own (test/helpers/cluster-db.ts): it runs once per CI run, in the PostgreSQL pass.
 */
const skip = await clusterSkipReason('cluster-edge-tls suite');

describe('edge TLS of tunnels held by another instance', { skip, timeout: 120_000 }, () => {
  const schema = clusterSchema('etls');
  const closers: (() => unknown)[] = [];
  let a: PairedInstance;
  let b: PairedInstance;
  let tlsPort: number;
  let session: ngrok.Session;
  let clientCaPem: string;
  let trusted: IssuedCertificate;
  let stranger: IssuedCertificate;
  /** The agent's own CA and certificate (TLSTermination): B serving burrow's would fail a client trusting only this. */
  let agentCaPem: string;
  let agentLeaf: IssuedCertificate;
  let plain: PlainService;
  let web: http.Server;
  const seen: http.IncomingHttpHeaders[] = [];

  before(async () => {
    // every line either instance writes is searched for the agent's key
    const pair = await startInstancePair(schema.url, { LOG_LEVEL: 'debug' });
    ({ a, b } = pair);
    tlsPort = pair.ports.tls;
    ({ clientCaPem, trusted, stranger, agentCaPem, agentLeaf } = await makeEdgeTlsCertificates(['own-cert.example.com', 'both.example.com']));

    plain = await startPlainService();
    closers.push(() => plain.close());
    web = await startHelloService(seen);
    closers.push(() => new Promise((resolve) => web.close(resolve)));
    const cred = await makeCredential(a, []);
    session = await new ngrok.SessionBuilder().authtoken(cred.token).serverAddr(`127.0.0.1:${a.agentPort}`).caCert(a.ca).connect();
  });

  after(async () => {
    await session?.close().catch(() => {});
    for (const close of closers) await close();
    await cleanupProcesses();
    await schema.drop();
  });

  const webUrl = () => `http://127.0.0.1:${(web.address() as net.AddressInfo).port}`;
  const plainUrl = () => `tcp://127.0.0.1:${plain.port}`;

  const getThroughB = (host: string, options: https.RequestOptions = {}) => httpsGet(EDGE_B, tlsPort, host, { ca: b.ca, ...options });

  /** One exchange with the plain service through B's TLS port. */
  const exchangeThroughB = (host: string, message: string, options: tls.ConnectionOptions) => tlsExchange(tlsPort, host, message, { host: EDGE_B, ...options });

  /** B's public_connection lines for an endpoint or edge, once written (at the close). */
  async function outcomesOnB(endpointOrEdge: string): Promise<unknown[]> {
    await new Promise((resolve) => setTimeout(resolve, 300));
    return b
      .logs()
      .filter((line) => line.event === 'public_connection' && (line.endpoint_id === endpointOrEdge || line.edge_id === endpointOrEdge))
      .map((line) => line.outcome ?? line.verdict);
  }

  async function endpointId(url: string): Promise<string> {
    const endpoints = await api(b, 'GET', '/endpoints');
    const endpoint = (endpoints.body.endpoints as { id: string; public_url: string }[]).find((each) => each.public_url === url);
    assert.ok(endpoint, endpoints.text);
    return endpoint.id;
  }

  it('https with .mutualTlsca() on A: B serves a client of the CA with conn.tls.* filled, and refuses no certificate or a stranger\'s before any request', async () => {
    const host = 'mtls-https.example.com';
    const listener = await session.httpEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).trafficPolicy(TLS_HEADERS_POLICY).listenAndForward(webUrl());
    const answer = await eventually(() => getThroughB(host, { cert: trusted.certPem, key: trusted.keyPem, maxVersion: 'TLSv1.2' }));
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'hello');
    const headers = seen.at(-1)!;
    assert.equal(headers['x-tls-version'], '1.2');
    assert.equal(headers['x-tls-sni'], host);
    assert.equal(headers['x-client-cn'], 'client.example.com');
    assert.equal(headers['x-client-serial'], new X509Certificate(trusted.certPem).serialNumber.toLowerCase().replace(/^0+/, ''));

    const reached = seen.length;
    await assert.rejects(getThroughB(host));
    await assert.rejects(getThroughB(host, { cert: stranger.certPem, key: stranger.keyPem }));
    assert.equal(seen.length, reached, 'a refused client reached the agent');
    const outcomes = await outcomesOnB(await endpointId(listener.url()!));
    assert.deepEqual(outcomes.filter((outcome) => outcome === 'client_certificate').length, 2, JSON.stringify(outcomes));
  });

  it('tls with .termination(cert, key) on A: B serves the agent\'s certificate and the service reads plaintext', async () => {
    const host = 'own-cert.example.com';
    await session.tlsEndpoint().domain(host).termination(Buffer.from(agentLeaf.certPem), Buffer.from(agentLeaf.keyPem)).listenAndForward(plainUrl());
    const reached = plain.firstBytes.length;
    // trusted only through the agent's CA: B's own certificate would fail this handshake
    const { greeting, echoed } = await eventually(() => exchangeThroughB(host, 'in the clear', { ca: agentCaPem }));
    assert.equal(greeting, 'plain');
    assert.equal(echoed, 'in the clear');
    assert.equal(plain.firstBytes.at(-1)?.toString(), 'in the clear');
    assert.ok(plain.firstBytes.length > reached);
    await assert.rejects(exchangeThroughB(host, 'x', { ca: b.ca }), 'B served its own certificate');
  });

  it('tls with .mutualTlsca() and .termination() on A: through B, only a client the CA issued gets through', async () => {
    const host = 'both.example.com';
    const listener = await session.tlsEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).termination(Buffer.from(agentLeaf.certPem), Buffer.from(agentLeaf.keyPem)).listenAndForward(plainUrl());
    assert.equal((await eventually(() => exchangeThroughB(host, 'trusted', { ca: agentCaPem, cert: trusted.certPem, key: trusted.keyPem }))).echoed, 'trusted');
    const reached = plain.firstBytes.length;
    await assert.rejects(exchangeThroughB(host, 'none', { ca: agentCaPem }));
    await assert.rejects(exchangeThroughB(host, 'stranger', { ca: agentCaPem, cert: stranger.certPem, key: stranger.keyPem }));
    assert.equal(plain.firstBytes.length, reached, 'a refused client reached the service');
    const outcomes = await outcomesOnB(await endpointId(listener.url()!));
    assert.equal(outcomes.filter((outcome) => outcome === 'client_certificate').length, 2, JSON.stringify(outcomes));
  });

  it('tls with .mutualTlsca() alone on A: B terminates with its own certificate and checks the client', async () => {
    const host = 'edge-only.example.com';
    await session.tlsEndpoint().domain(host).mutualTlsca(Buffer.from(clientCaPem)).listenAndForward(plainUrl());
    assert.equal((await eventually(() => exchangeThroughB(host, 'trusted', { ca: b.ca, cert: trusted.certPem, key: trusted.keyPem }))).echoed, 'trusted');
    await assert.rejects(exchangeThroughB(host, 'none', { ca: b.ca }));
  });

  it('a TLS edge (in the database) whose tunnel is on A: B terminates with its tls_termination module, and checks clients with its policy\'s terminate-tls', async () => {
    await session.labeledListener().label('app', 'etls').listenAndForward(plainUrl());
    const group = await api(b, 'POST', '/backends/tunnel_group', { body: { labels: { app: 'etls' } } });
    assert.equal(group.status, 201, group.text);
    const edge = await api(b, 'POST', '/edges/tls', {
      body: { hostports: ['plain-edge.example.com:443'], backend: { backend_id: group.body.id }, tls_termination: { terminate_at: 'edge', min_version: '1.3' } },
    });
    assert.equal(edge.status, 201, edge.text);
    const served = await eventually(() => exchangeThroughB('plain-edge.example.com', 'edge clear', { ca: b.ca, minVersion: 'TLSv1.3' }));
    assert.equal(served.protocol, 'TLSv1.3');
    assert.equal(served.echoed, 'edge clear');
    assert.equal(plain.firstBytes.at(-1)?.toString(), 'edge clear');
    await assert.rejects(exchangeThroughB('plain-edge.example.com', 'old', { ca: b.ca, maxVersion: 'TLSv1.2' }));
    assert.ok((await outcomesOnB(edge.body.id as string)).includes('tls_version'));

    // the mutual_tls module is not served (HTTP-POLICY.md §5); client certificates on an edge come from its policy
    const module = await api(b, 'POST', '/edges/tls', { body: { hostports: ['refused-mtls.example.com:443'], mutual_tls: { enabled: true } } });
    assert.equal(module.status, 400, module.text);
    const policy = JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'terminate-tls', config: { mutual_tls_certificate_authorities: [clientCaPem] } }] }] });
    const mtlsEdge = await api(a, 'POST', '/edges/tls', {
      body: { hostports: ['mtls-edge.example.com:443'], backend: { backend_id: group.body.id }, traffic_policy: { value: policy } },
    });
    assert.equal(mtlsEdge.status, 201, mtlsEdge.text);
    const trustedAnswer = await eventually(() => exchangeThroughB('mtls-edge.example.com', 'edge trusted', { ca: b.ca, cert: trusted.certPem, key: trusted.keyPem }));
    assert.equal(trustedAnswer.echoed, 'edge trusted');
    const reached = plain.firstBytes.length;
    await assert.rejects(exchangeThroughB('mtls-edge.example.com', 'none', { ca: b.ca }));
    await assert.rejects(exchangeThroughB('mtls-edge.example.com', 'stranger', { ca: b.ca, cert: stranger.certPem, key: stranger.keyPem }));
    assert.equal(plain.firstBytes.length, reached, 'a refused client reached the service');
  });

  it('the agent\'s TLSTermination key is in no log line of either instance and in no database row', async () => {
    const keyBody = agentLeaf.keyPem.split('\n').find((line) => line.length >= 40 && !line.startsWith('-----'));
    assert.ok(keyBody);
    const keyBase64 = Buffer.from(agentLeaf.keyPem).toString('base64').slice(40, 100);
    for (const server of [a, b]) {
      const output = [...server.stdout, ...server.stderr].join('\n');
      assert.ok(!output.includes(keyBody) && !output.includes(keyBase64), 'the key was logged');
    }
    const client = new pg.Client({ connectionString: clusterDatabase });
    await client.connect();
    try {
      const tables = await client.query<{ table_name: string }>('select table_name from information_schema.tables where table_schema = $1', [schema.name]);
      assert.ok(tables.rows.length > 0);
      for (const { table_name } of tables.rows) {
        const rows = await client.query<{ row: string }>(`select t::text as row from "${schema.name}"."${table_name}" t`);
        for (const { row } of rows.rows) assert.ok(!row.includes(keyBody) && !row.includes(keyBase64), `the key is stored in ${table_name}`);
      }
    } finally {
      await client.end();
    }
  });
});
