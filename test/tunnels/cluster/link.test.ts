// @test-pass sqlite
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { ClusterLink, LINK_NAME, linkCredentials, type LinkCredentials } from '../../../src/tunnels/cluster/link.js';
import type { MuxadoStream } from '../../../src/tunnels/muxado/stream.js';
import { loadOrCreateCa, type CertificateAuthority } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';

const tempDir = () => mkdtempSync(join(tmpdir(), 'burrow-link-'));

/** A link that echoes every forwarded stream, prefixed with the peer it came from. */
function echoLink(instanceId: string, credentials: LinkCredentials, options: { heartbeatIntervalMs?: number; heartbeatToleranceMs?: number } = {}): ClusterLink {
  return new ClusterLink({
    instanceId,
    credentials,
    ...options,
    onStream: (stream: MuxadoStream, peerId: string) => {
      stream.write(`${peerId}:`);
      stream.pipe(stream);
    },
  });
}

async function roundTrip(stream: MuxadoStream, text: string): Promise<string> {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.end(text);
  await once(stream, 'end');
  return Buffer.concat(chunks).toString();
}

describe('the inter-instance link', () => {
  let ca: CertificateAuthority;
  let credentials: LinkCredentials;
  const links: ClusterLink[] = [];
  const track = (link: ClusterLink) => (links.push(link), link);

  before(async () => {
    ca = await loadOrCreateCa(tempDir());
    credentials = await linkCredentials(ca);
  });
  after(() => Promise.all(links.map((link) => link.close())));

  it('carries a stream both ways, and the other end knows which instance opened it', async () => {
    const a = track(echoLink('inst_a', credentials));
    const b = track(echoLink('inst_b', await linkCredentials(ca)));
    const addrB = await b.listen(0, '127.0.0.1');
    assert.equal(await roundTrip(await a.open('inst_b', addrB), 'hello'), 'inst_a:hello');
    assert.equal(await roundTrip(await a.open('inst_b', addrB), 'again'), 'inst_a:again');
    // b reaches a over the session a opened: one connection for the pair
    assert.equal(await roundTrip(await b.open('inst_a', '127.0.0.1:1'), 'back'), 'inst_b:back');
  });

  it('holds back a writer when the other end does not read: what is in flight stays within a window', async () => {
    let held: MuxadoStream | undefined;
    const b = track(new ClusterLink({ instanceId: 'inst_b', credentials, onStream: (stream) => (held = stream) }));
    const addr = await b.listen(0, '127.0.0.1');
    const a = track(echoLink('inst_a', credentials));
    const stream = await a.open('inst_b', addr);
    const chunk = Buffer.alloc(64 * 1024, 7);
    // write while the stream drains; stop when it has not drained for half a second
    let written = 0;
    for (;;) {
      written += chunk.length;
      if (stream.write(chunk)) continue;
      const drained = await Promise.race([once(stream, 'drain').then(() => true), new Promise<boolean>((resolve) => setTimeout(resolve, 500, false))]);
      if (!drained) break;
      assert.ok(written < 4 * 1024 * 1024, `${written} bytes taken while nobody reads`);
    }
    assert.ok(stream.writableLength > 0, 'the writer is held back');
    // the reader starts: everything arrives
    let received = 0;
    const total = written;
    held!.on('data', (data: Buffer) => (received += data.length));
    stream.end();
    await new Promise((resolve) => held!.once('end', resolve));
    assert.equal(received, total);
  });

  it('refuses a stranger: a client without a certificate, with another CA\'s, or with an agent certificate of the same CA', async () => {
    let served = 0;
    const b = track(new ClusterLink({ instanceId: 'inst_b', credentials, onStream: () => served++ }));
    const addr = await b.listen(0, '127.0.0.1');
    const port = Number(addr.split(':')[1]);
    const otherCa = await loadOrCreateCa(tempDir());
    const stranger = await issueCertificate(otherCa, { dnsNames: [LINK_NAME], clientAuth: true });
    const agentLeaf = await issueCertificate(ca, { dnsNames: ['localhost'] });
    const clients: tls.ConnectionOptions[] = [
      {},
      { cert: stranger.certPem, key: stranger.keyPem },
      { cert: agentLeaf.certPem, key: agentLeaf.keyPem },
    ];
    for (const client of clients) {
      const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.certPem, servername: LINK_NAME, ...client });
      socket.on('error', () => {});
      socket.write(Buffer.from([0, 0, 0, 1, 1 << 4 | 2, 0, 0, 0, 3, 2])); // a muxado SYN of a forward stream
      await new Promise((resolve) => socket.once('close', resolve));
    }
    assert.equal(served, 0);
  });

  it('a dialer refuses a listener that is not of the cluster', async () => {
    const otherCa = await loadOrCreateCa(tempDir());
    const impostor = track(echoLink('inst_x', await linkCredentials(otherCa)));
    const addr = await impostor.listen(0, '127.0.0.1');
    const a = track(echoLink('inst_a', credentials));
    await assert.rejects(a.open('inst_x', addr));
  });

  it('after the peer restarts, the next stream opens a new connection by itself', async () => {
    const a = track(echoLink('inst_a', credentials));
    const first = echoLink('inst_b', credentials);
    const addr = await first.listen(0, '127.0.0.1');
    assert.equal(await roundTrip(await a.open('inst_b', addr), '1'), 'inst_a:1');
    await first.close();
    const second = track(echoLink('inst_b', credentials));
    await second.listen(Number(addr.split(':')[1]), '127.0.0.1');
    // the broken session is noticed (closed transport), then redialed
    let answer: string | undefined;
    for (let attempt = 0; attempt < 50 && answer === undefined; attempt++) {
      answer = await a.open('inst_b', addr).then((stream) => roundTrip(stream, '2')).catch(() => undefined);
      if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(answer, 'inst_a:2');
  });

  it('a link that goes silent (a network cut) is closed by its heartbeat, failing its streams fast', { timeout: 10_000 }, async () => {
    const a = track(echoLink('inst_a', credentials, { heartbeatIntervalMs: 50, heartbeatToleranceMs: 300 }));
    const b = track(echoLink('inst_b', credentials));
    const addr = await b.listen(0, '127.0.0.1');
    const cut = new TcpProxy('127.0.0.1', Number(addr.split(':')[1]));
    await cut.start();
    const stream = await a.open('inst_b', `127.0.0.1:${cut.port}`);
    assert.equal(await roundTrip(await a.open('inst_b', `127.0.0.1:${cut.port}`), 'up'), 'inst_a:up');
    cut.freeze();
    const started = Date.now();
    await new Promise((resolve) => stream.once('close', resolve));
    assert.ok(Date.now() - started < 5_000, `closed after ${Date.now() - started} ms`);
    await cut.cut();
  });
});
