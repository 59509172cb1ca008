import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { Flag, FrameType, encodeData } from '../../src/tunnels/muxado/index.js';
import { makeCredential, startDataPlaneServer, type DataPlaneServer } from '../helpers/data-plane.js';
import { RawAgent } from '../helpers/raw-agent.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/**
 * An upgrade the local server declines, with an agent that relays bytes as they are (as ngrok's
 * Go agent does; the npm SDK closes such a connection itself): burrow passes the answer, then
 * closes the public connection, so a later request cannot reach the local server raw, without
 * burrow's routing or forwarded headers.
 */

const HOST = 'raw-upgrade.example.test';
let server: DataPlaneServer;
let agent: RawAgent;

before(async () => {
  server = await startDataPlaneServer();
  const { token } = await makeCredential(server, []);
  agent = await RawAgent.connect(server.plane.agentPort, server.caCert());
  await agent.auth(token);
  agent.open(5, 1, JSON.stringify({ Id: '', Proto: 'http', Opts: { Hostname: HOST }, Extra: {} }));
  const bound = await agent.reply(5);
  assert.equal(bound.Error ?? '', '', JSON.stringify(bound));
});

after(async () => {
  agent?.destroy();
  await cleanupProcesses();
});

test('a declined upgrade: the answer reaches the client, then the connection closes and nothing more reaches the agent', { timeout: 30_000 }, async () => {
  const client = net.connect(server.plane.httpPort, '127.0.0.1');
  let got = '';
  client.on('error', () => {});
  client.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  client.write(`GET /declined HTTP/1.1\r\nHost: ${HOST}\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`);
  // the proxy stream burrow opens (even id, SYN) and the request on it
  const stream = await agent.until('a proxy stream with the request', () => {
    const syn = agent.frames().findLast((f) => f.type === FrameType.Data && f.streamId % 2 === 0 && (f.flags & Flag.Syn) !== 0);
    return syn && agent.data(syn.streamId).bytes.includes('\r\n\r\n') ? syn.streamId : undefined;
  });
  agent.write(encodeData(stream, 0, Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\nno thank')));
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (!client.destroyed) client.write(`GET /sneaky HTTP/1.1\r\nHost: ${HOST}\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n`);
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2_000))]);
  assert.equal(got, 'HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\nno thank');
  assert.ok(client.destroyed || client.readableEnded, 'the public connection was closed after the answer');
  assert.ok(!agent.data(stream).bytes.includes('sneaky'), 'a later request went raw to the agent');
  client.destroy();
});
