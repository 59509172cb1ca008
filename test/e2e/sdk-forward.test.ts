import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { cleanupProcesses } from '../helpers/server-process.js';
import { createToken, hostPort, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * The SDK's one-call API, `ngrok.forward({...})` (snake_case options, its own session per call),
 * as a user following the SDK's README would write it with only the server address and CA changed.
 */

let server: TrafficServer;
let token: string;
let local: http.Server;
let echo: net.Server;

before(async () => {
  server = await startDataPlane();
  token = await createToken(server);
  local = http.createServer((req, res) => res.end(`local saw ${req.method} ${req.url}`));
  echo = net.createServer((socket) => socket.pipe(socket));
  await Promise.all([local, echo].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
});

after(async () => {
  await ngrok.disconnect().catch(() => {});
  await Promise.all([local, echo].map((s) => new Promise((resolve) => s.close(resolve))));
  await cleanupProcesses();
});

const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

test('forward() with root_cas and server_addr: an http endpoint answers through burrow', { timeout: 30_000 }, async () => {
  const listener = await ngrok.forward({
    addr: portOf(local),
    authtoken: token,
    server_addr: `127.0.0.1:${server.agentPort}`,
    root_cas: server.caPath,
    schemes: ['HTTP'],
    domain: 'forwarded.burrow.localhost',
  });
  assert.equal(listener.url(), `http://forwarded.burrow.localhost:${server.httpPort}`);
  const body = await new Promise<string>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: server.httpPort, path: '/hello', headers: { host: 'forwarded.burrow.localhost' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve(text));
    });
    req.on('error', reject);
  });
  assert.equal(body, 'local saw GET /hello');
  await listener.close();
});

test('forward() with session_ca_cert and proto tcp: bytes echo through a random port', { timeout: 30_000 }, async () => {
  const listener = await ngrok.forward({
    addr: `127.0.0.1:${portOf(echo)}`,
    authtoken: token,
    server_addr: `127.0.0.1:${server.agentPort}`,
    session_ca_cert: readFileSync(server.caPath, 'utf8'),
    proto: 'tcp',
  });
  const { port } = hostPort(listener.url()!);
  assert.ok(port >= server.tcpPorts.first && port <= server.tcpPorts.last, listener.url()!);
  const echoed = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('ping through forward()'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString());
    });
    socket.on('error', reject);
  });
  assert.equal(echoed, 'ping through forward()');
  await listener.close();
});
