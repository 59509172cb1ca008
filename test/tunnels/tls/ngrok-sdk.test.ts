// @test-pass sqlite
// The official npm SDK (@ngrok/ngrok 1.7.0, ngrok-rust inside: rustls) trusts the agent leaf that
// burrow issues, given the CA as caCert. No protocol server here: the test only watches the TLS
// handshake complete on burrow's side, then hangs up; the SDK's connect() then fails, as expected.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createServer, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { agentTlsMaterial } from '../../../src/tunnels/tls/material.js';
import { tempDir } from './helpers.js';

type Outcome = 'handshake' | `refused: ${string}`;

async function sdkHandshake(material: { cert: string; key: string }, dial: string, caPem: string): Promise<Outcome> {
  const ngrok = await import('@ngrok/ngrok');
  let settle!: (o: Outcome) => void;
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
  const server = createServer({ cert: material.cert, key: material.key }, (socket: TLSSocket) => {
    settle('handshake');
    socket.destroy();
  });
  server.on('tlsClientError', (err) => settle(`refused: ${err.message}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    const session = new ngrok.SessionBuilder()
      .authtoken('burrow_test_token')
      .serverAddr(`${dial}:${port}`)
      .caCert(Buffer.from(caPem))
      .connect();
    session.catch(() => {}); // no protocol server: the session itself never comes up
    const timer = setTimeout(() => settle('refused: no TLS connection within 10 s'), 10_000);
    const result = await outcome;
    clearTimeout(timer);
    await session.then((s) => s.close(), () => {});
    return result;
  } finally {
    server.close();
  }
}

describe('@ngrok/ngrok (rustls) and the agent leaf', () => {
  it('completes the TLS handshake dialling localhost and 127.0.0.1 with the CA as caCert, and refuses another CA', async (t) => {
    const tlsDir = await tempDir(t);
    const material = await agentTlsMaterial({ tlsDir });
    const ca = await loadOrCreateCa(tlsDir);
    assert.equal(await sdkHandshake(material, 'localhost', ca.certPem), 'handshake');
    assert.equal(await sdkHandshake(material, '127.0.0.1', ca.certPem), 'handshake');
    const other = await loadOrCreateCa(await tempDir(t));
    assert.match(await sdkHandshake(material, '127.0.0.1', other.certPem), /^refused/);
  });
});
