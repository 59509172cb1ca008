// @test-pass sqlite
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

// Store-independent (bytes on the public connection; the store only records the bind, as in every suite of both
// passes): on the SQLite pass only.
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

/**
 * Sends an upgrade request with `method`, answers it from the agent with `answer`, then writes a
 * later request with a forged X-Forwarded-For. Returns what the client got, whether its connection
 * closed within 2 s of that, and what reached the agent on the proxy stream.
 */
async function declinedUpgrade(method: string, answer: string): Promise<{ got: string; closed: boolean; upstream: string }> {
  const client = net.connect(server.plane.httpPort, '127.0.0.1');
  let got = '';
  client.on('error', () => {});
  client.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
  const closed = new Promise<boolean>((resolve) => client.once('close', () => resolve(true)));
  client.write(`${method} /declined HTTP/1.1\r\nHost: ${HOST}\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`);
  const before = agent.frames().length;
  // the proxy stream burrow opens (even id, SYN) and the request on it
  const stream = await agent.until('a proxy stream with the request', () => {
    const syn = agent.frames().slice(before).find((f) => f.type === FrameType.Data && f.streamId % 2 === 0 && (f.flags & Flag.Syn) !== 0);
    return syn && agent.data(syn.streamId).bytes.includes('\r\n\r\n') ? syn.streamId : undefined;
  });
  agent.write(encodeData(stream, 0, Buffer.from(answer)));
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (!client.destroyed) client.write(`GET /sneaky HTTP/1.1\r\nHost: ${HOST}\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n`);
  const wasClosed = await Promise.race([closed, new Promise<boolean>((resolve) => setTimeout(() => resolve(client.readableEnded), 2_000))]);
  client.destroy();
  return { got, closed: wasClosed, upstream: agent.data(stream).bytes.toString('latin1') };
}

test('a declined upgrade: the answer reaches the client, then the connection closes and nothing more reaches the agent', { timeout: 30_000 }, async () => {
  const answer = 'HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\nno thank';
  const { got, closed, upstream } = await declinedUpgrade('GET', answer);
  assert.equal(got, answer);
  assert.ok(closed, 'the public connection was closed after the answer');
  assert.ok(!upstream.includes('sneaky'), 'a later request went raw to the agent');
});

test('a declined upgrade of a HEAD request: the answer has no body whatever its Content-Length, and the connection closes after it', { timeout: 30_000 }, async () => {
  const answer = 'HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n';
  const { got, closed, upstream } = await declinedUpgrade('HEAD', answer);
  assert.equal(got, answer);
  assert.ok(closed, 'the public connection was closed after the answer');
  assert.ok(!upstream.includes('sneaky'));
});
