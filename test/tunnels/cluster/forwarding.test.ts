import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ForwardedStreams, Forwarder, frame, remoteTunnel } from '../../../src/tunnels/cluster/forwarding.js';
import { ClusterLink, linkCredentials, type LinkCredentials } from '../../../src/tunnels/cluster/link.js';
import { KINDS, type StreamKind } from '../../../src/tunnels/public/opener.js';
import type { LiveTunnel } from '../../../src/tunnels/registry.js';
import { NO_POLICY, compileBindPolicy } from '../../../src/domain/tunnels/connection-policy.js';
import { AgentCertificate } from '../../../src/domain/tunnels/edge-tls.js';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate, type IssuedCertificate } from '../../../src/tunnels/tls/certificates.js';
import type { ProtocolStream } from '../../../src/tunnels/protocol/index.js';

/** The agent's end of a proxy stream: records what it was opened with and what arrives; reads only when told. */
class FakeAgentStream extends Duplex {
  readonly id = 1;
  received = 0;
  private waiting: (() => void) | undefined;
  reading = true;
  constructor() {
    super({ highWaterMark: 16 * 1024 });
  }
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.received += chunk.length;
    if (this.reading) callback();
    else this.waiting = callback;
  }
  override _read(): void {}
  resumeReading(): void {
    this.reading = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }
  reset(): void {
    this.destroy();
  }
}

const tunnel: LiveTunnel = { id: 'tn_1', sessionId: 'ts_1', accountId: 'acc', proto: 'http', url: 'http://a.example', labels: null, proxyProto: 0, policy: NO_POLICY };

describe('forwarding over the link', () => {
  let credentials: LinkCredentials;
  const links: ClusterLink[] = [];
  const opened: Array<{ kind: StreamKind; remoteAddress: string | undefined; stream: FakeAgentStream }> = [];
  let forwarder: Forwarder;
  const holder = { instanceId: 'inst_a', clusterAddr: '' };
  let agentLeaf: IssuedCertificate;
  let clientCa: string;

  before(async () => {
    const ca = await loadOrCreateCa(mkdtempSync(join(tmpdir(), 'burrow-fwd-')));
    credentials = await linkCredentials(ca);
    agentLeaf = await issueCertificate(ca, { dnsNames: ['own.example.com'] });
    clientCa = ca.certPem;
    // a tls bind with TLSTermination and MutualTLSAtEdge
    const terminated: LiveTunnel = {
      ...tunnel,
      id: 'tn_tls',
      proto: 'tls',
      url: 'tls://own.example.com:443',
      policy: { ...NO_POLICY, edgeTls: { clientCas: [clientCa], certificate: new AgentCertificate(agentLeaf.certPem, agentLeaf.keyPem) } },
    };
    const policed = { ...tunnel, policy: compileBindPolicy('{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}', { allowCidrs: ['10.0.0.0/8'], denyCidrs: [] }, 10, 'http') };
    const served = new ForwardedStreams(
      { get: (sessionId) => (sessionId === 'ts_1' ? { tunnels: new Map([[tunnel.id, policed], [terminated.id, terminated]]) } : undefined) },
      {
        open: (choice, kind, ends) => {
          const stream = new FakeAgentStream();
          opened.push({ kind, remoteAddress: ends.remoteAddress, stream });
          return { tunnel: choice.candidates[0]!, stream: stream as unknown as ProtocolStream };
        },
      },
    );
    const a = new ClusterLink({ instanceId: 'inst_a', credentials, onStream: (stream, _peer, kind) => served.serve(stream, kind) });
    const b = new ClusterLink({ instanceId: 'inst_b', credentials, onStream: () => {} });
    links.push(a, b);
    holder.clusterAddr = await a.listen(0, '127.0.0.1');
    forwarder = new Forwarder(b);
    await forwarder.describe(holder, 'tn_1', 'ts_1'); // dials the link
  });
  after(() => Promise.all(links.map((link) => link.close())));

  it('describes a held tunnel (its PROXY protocol and policy inputs), and nothing for one it does not hold', async () => {
    const described = await forwarder.describe(holder, 'tn_1', 'ts_1');
    assert.equal(described?.proxyProto, 0);
    assert.deepEqual(described?.policy?.ipRestriction, { allowCidrs: ['10.0.0.0/8'], denyCidrs: [] });
    assert.match(String(described?.policy?.trafficPolicy), /deny/);
    assert.equal(await forwarder.describe(holder, 'tn_gone', 'ts_1'), undefined);
  });

  it('describes a tunnel\'s edge TLS, the agent\'s key included, and the accepting side serves the same', async () => {
    const route = { tunnelId: 'tn_tls', sessionId: 'ts_1', accountId: 'acc', proto: 'tls', url: 'tls://own.example.com:443', labels: null };
    const described = await forwarder.describe(holder, route.tunnelId, route.sessionId);
    assert.ok(described?.edgeTls);
    const edgeTls = remoteTunnel(route, holder, described).policy.edgeTls;
    assert.deepEqual(edgeTls?.clientCas?.map((pem) => pem.trim()), [clientCa.trim()]);
    assert.equal(edgeTls?.certificate?.cert.trim(), agentLeaf.certPem.trim());
    assert.equal(edgeTls?.certificate?.privateKey(), agentLeaf.keyPem);
    // an http tunnel has none
    assert.equal((await forwarder.describe(holder, 'tn_1', 'ts_1'))?.edgeTls, undefined);
  });

  it('carries a connection to the agent with its client and kind; a slow agent holds the sender back', async () => {
    const stream = forwarder.open({ ...tunnel, remote: holder }, KINDS.tcp, { ip: '203.0.113.9', port: 4242 }, undefined)!;
    assert.ok(stream);
    stream.write('hello');
    while (opened.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const agent = opened.at(-1)!;
    assert.deepEqual(agent.kind, KINDS.tcp);
    assert.equal(agent.remoteAddress, '203.0.113.9');
    agent.stream.reading = false;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let written = 0;
    for (;;) {
      written += chunk.length;
      if (stream.write(chunk)) continue;
      const drained = await Promise.race([once(stream, 'drain').then(() => true), new Promise<boolean>((resolve) => setTimeout(resolve, 500, false))]);
      if (!drained) break;
      assert.ok(written < 8 * 1024 * 1024, `${written} bytes taken while the agent does not read`);
    }
    // what is in flight across the hop: two muxado windows and the streams' buffers, not the sender's all
    assert.ok(written - agent.stream.received < 2 * 1024 * 1024, `${written - agent.stream.received} bytes in flight`);
    agent.stream.resumeReading();
    stream.end();
    while (agent.stream.received < written + 5) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(agent.stream.received, written + 5);
  });

  it('a stream naming no tunnel held here, or with a broken header, is closed before any byte', async () => {
    for (const header of [frame({ tunnelId: 'tn_gone', sessionId: 'ts_1', kind: KINDS.tcp, client: { ip: '1.2.3.4', port: 1 } }), Buffer.from([0xff, 0xff, 1, 2, 3])]) {
      const before = opened.length;
      const stream = await links[1]!.open('inst_a', holder.clusterAddr, 'forward');
      stream.write(header);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      await new Promise((resolve) => stream.once('close', resolve));
      assert.equal(Buffer.concat(chunks).length, 0);
      assert.equal(opened.length, before);
    }
  });
});
