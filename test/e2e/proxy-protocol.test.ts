// @test-pass sqlite
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { proxyProtocolHeader } from '../../src/tunnels/public/proxy-proto.js';
import { waitFor } from '../helpers/data-plane.js';
import { cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, hostPort, startDataPlane, type TrafficServer } from '../helpers/traffic.js';
import { exchange } from '../helpers/raw-exchange.js';

/**
 * PROXY_PROTOCOL_FROM (CLUSTER.md §1): the public HTTP, TLS and TCP listeners read a PROXY v1/v2
 * header from the balancer's addresses only (here 127.0.0.1; 127.0.0.2 is anyone else).
 */
// Store-independent (the listeners' header parsing): on the SQLite pass only.
describe('PROXY_PROTOCOL_FROM', () => {
  let server: TrafficServer;
  let session: ngrok.Session;
  let local: http.Server;
  let tcpPort: number;
  const balancer = { ip: '10.0.0.1', port: 80 };

  before(async () => {
    server = await startDataPlane({ env: { PROXY_PROTOCOL_FROM: '127.0.0.1/32' } });
    // the agent port never reads a header: the SDK connects from 127.0.0.1 without one
    session = await connectAgent(server, await createToken(server));
    local = http.createServer((req, res) => res.end(`xff=${req.headers['x-forwarded-for']}`));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const localPort = (local.address() as net.AddressInfo).port;
    for (const scheme of ['HTTP', 'HTTPS'] as const) await session.httpEndpoint().scheme(scheme).domain('pp.burrow.localhost').listenAndForward(`http://127.0.0.1:${localPort}`);
    const echo = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${localPort}`);
    tcpPort = hostPort(echo.url()!).port;
  });

  after(async () => {
    await session?.close().catch(() => {});
    local?.close();
    await cleanupProcesses();
  });

  const request = Buffer.from('GET / HTTP/1.1\r\nHost: pp.burrow.localhost\r\nConnection: close\r\n\r\n');
  const connectionLines = () => server.logs().filter((line) => line.event === 'public_connection');

  it('HTTP port: v1 and v2 from the balancer give the real client address to the local server', async () => {
    const v1 = await exchange(server.httpPort, Buffer.concat([proxyProtocolHeader(1, { ip: '203.0.113.7', port: 5000 }, balancer), request]));
    assert.match(v1, /^HTTP\/1\.1 200/);
    assert.match(v1, /xff=203\.0\.113\.7$/);
    const v2 = await exchange(server.httpPort, Buffer.concat([proxyProtocolHeader(2, { ip: '2001:db8::7', port: 5000 }, balancer), request]));
    assert.match(v2, /xff=2001:db8::7$/);
    await waitFor('the log line', () => connectionLines().find((line) => line.client_addr === '[2001:db8::7]:5000'));
  });

  it('HTTP port: from the balancer, a connection without the header is closed unanswered', async () => {
    assert.equal(await exchange(server.httpPort, request), '');
  });

  it('HTTP port: from another address the header is not read, and the peer is the client', async () => {
    const plain = await exchange(server.httpPort, request, '127.0.0.2');
    assert.match(plain, /xff=127\.0\.0\.2$/);
    const spoofed = await exchange(server.httpPort, Buffer.concat([proxyProtocolHeader(1, { ip: '203.0.113.8', port: 1 }, balancer), request]), '127.0.0.2');
    assert.match(spoofed, /^HTTP\/1\.1 400/);
    assert.doesNotMatch(spoofed, /203\.0\.113\.8/);
  });

  it('TCP endpoint port: the header names the client of the connection', async () => {
    const answer = await exchange(tcpPort, Buffer.concat([proxyProtocolHeader(2, { ip: '198.51.100.4', port: 4242 }, balancer), request]));
    assert.match(answer, /^HTTP\/1\.1 200/);
    await waitFor('the log line', () => connectionLines().find((line) => line.proto === 'tcp' && line.client_addr === '198.51.100.4:4242'));
  });

  it('TLS port: the header is read before the ClientHello', async () => {
    const raw = net.connect({ port: server.tlsPort, host: '127.0.0.1' });
    await new Promise((resolve) => raw.once('connect', resolve));
    raw.write(proxyProtocolHeader(1, { ip: '198.51.100.5', port: 4343 }, balancer));
    const secure = tls.connect({ socket: raw, servername: 'pp.burrow.localhost', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    await new Promise((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
    secure.end(request);
    const answer = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      secure.on('data', (chunk) => chunks.push(chunk)).on('close', () => resolve(Buffer.concat(chunks).toString()));
    });
    assert.match(answer, /xff=198\.51\.100\.5$/);
    await waitFor('the log line', () => connectionLines().find((line) => line.proto === 'https' && line.client_addr === '198.51.100.5:4343'));
  });
});
