// @test-pass sqlite
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Heartbeater, echoHeartbeats, type HeartbeatFailure } from '../../../src/tunnels/protocol/heartbeat.js';
import { encodeProxyPreamble, openProxyStream } from '../../../src/tunnels/protocol/proxy.js';
import { sendCommand, sendStopTunnel } from '../../../src/tunnels/protocol/commands.js';
import { MuxErrorCode } from '../../../src/tunnels/protocol/stream-session.js';
import { StreamType } from '../../../src/tunnels/protocol/stream-types.js';
import { StreamReader } from '../../../src/tunnels/protocol/stream-reader.js';
import { delay, nextStream, once, readAll, sessionPair, typeBytes, type FakeStream } from './fake-session.js';

/** Agent-side echo responder like RS/GO's (reads 4, writes 4). */
function agentEcho(s: FakeStream): void {
  const r = new StreamReader(s);
  void (async () => {
    await r.readExact(4); // type
    for (;;) {
      const b = await r.readExact(4).catch(() => null);
      if (b === null) return;
      s.write(b);
    }
  })();
}

describe('heartbeats', () => {
  it('echoes agent beats, byte for byte, in any chunking, and FINs after the agent', async () => {
    const [server, agent] = sessionPair();
    server.on('stream', (s: FakeStream) => {
      const r = new StreamReader(s);
      void r.readExact(4).then(() => echoHeartbeats(s, r));
    });
    const hb = agent.open();
    const got: Buffer[] = [];
    hb.on('data', (c: Buffer) => got.push(c));
    hb.write(Buffer.concat([typeBytes(StreamType.Heartbeat), Buffer.from([9, 8, 7])]));
    await delay(5);
    assert.equal(Buffer.concat(got).length, 0, 'no echo of a partial beat');
    hb.write(Buffer.from([6]));
    await delay(5);
    assert.deepEqual([...Buffer.concat(got)], [9, 8, 7, 6]);
    hb.write(Buffer.from([1, 2, 3, 4]));
    await delay(5);
    assert.deepEqual([...Buffer.concat(got)], [9, 8, 7, 6, 1, 2, 3, 4]);
    const ended = once(hb, 'end');
    hb.end();
    await ended;
    assert.equal(hb.peer.finSent, true);
  });

  it('beats sent without waiting for their echoes are coalesced: the latest is echoed, never a queue of them', async () => {
    const [server, agent] = sessionPair();
    let writes = 0;
    server.on('stream', (s: FakeStream) => {
      const write = s.write.bind(s);
      s.write = ((...args: Parameters<typeof write>) => (writes++, write(...args))) as typeof s.write;
      const r = new StreamReader(s);
      void r.readExact(4).then(() => echoHeartbeats(s, r));
    });
    const hb = agent.open();
    const got: Buffer[] = [];
    hb.on('data', (c: Buffer) => got.push(c));
    const beats = Buffer.alloc(4 * 10_000, 1);
    beats.writeUInt32BE(0xdeadbeef, beats.length - 4); // the latest beat
    hb.write(Buffer.concat([typeBytes(StreamType.Heartbeat), beats]));
    await delay(20);
    const echoed = Buffer.concat(got);
    assert.ok(writes >= 1 && writes <= 2, `${writes} echo writes for 10,000 beats`);
    assert.equal(echoed.readUInt32BE(echoed.length - 4), 0xdeadbeef);
  });

  it('server heartbeater: type + first beat at once, latency recorded, beats repeat', async () => {
    const [server, agent] = sessionPair();
    agent.on('stream', agentEcho);
    const lat: number[] = [];
    const fails: HeartbeatFailure[] = [];
    const hb = new Heartbeater(server, { intervalMs: 10, toleranceMs: 50, onTimeout: (r) => fails.push(r), onLatency: (ms) => lat.push(ms) });
    hb.start();
    await delay(80);
    hb.stop();
    assert.ok(hb.answered >= 3, `answered ${hb.answered}`);
    assert.ok(lat.length >= 3 && lat.every((x) => x >= 0));
    assert.notEqual(hb.lastLatencyMs, null);
    assert.deepEqual(fails, []);
  });

  it('server heartbeater: silent agent → onTimeout("timeout") once, stream reset', async () => {
    const [server, agent] = sessionPair();
    const incoming = nextStream(agent);
    const fails: HeartbeatFailure[] = [];
    const hb = new Heartbeater(server, { intervalMs: 10, toleranceMs: 30, onTimeout: (r) => fails.push(r) });
    hb.start();
    const a = await incoming;
    await delay(80);
    assert.deepEqual(fails, ['timeout']);
    assert.equal(a.receivedReset, MuxErrorCode.StreamCancelled);
  });

  it('server heartbeater: wrong echo → "mismatch"; closed stream → "closed"', async () => {
    const [server, agent] = sessionPair();
    agent.on('stream', (s: FakeStream) => {
      s.once('data', () => s.write(Buffer.from([0, 0, 0, 0])));
    });
    const fails: HeartbeatFailure[] = [];
    new Heartbeater(server, { intervalMs: 10, toleranceMs: 200, onTimeout: (r) => fails.push(r), random: () => Buffer.from([1, 2, 3, 4]) }).start();
    await delay(20);
    assert.deepEqual(fails, ['mismatch']);

    const [server2, agent2] = sessionPair();
    agent2.on('stream', (s: FakeStream) => s.once('data', () => s.end()));
    const fails2: HeartbeatFailure[] = [];
    new Heartbeater(server2, { intervalMs: 10, toleranceMs: 200, onTimeout: (r) => fails2.push(r) }).start();
    await delay(20);
    assert.deepEqual(fails2, ['closed']);
  });
});

describe('proxy streams', () => {
  it('preamble bytes: type 3, int64 LE length, JSON header with all five fields', () => {
    const b = encodeProxyPreamble({ id: 'tn_1', clientAddr: '1.2.3.4:5678', proto: 'tls', edgeType: '2', passthroughTls: true });
    const json = '{"Id":"tn_1","ClientAddr":"1.2.3.4:5678","Proto":"tls","EdgeType":"2","PassthroughTLS":true}';
    const expected = Buffer.concat([Buffer.from([0, 0, 0, 3]), Buffer.alloc(8), Buffer.from(json)]);
    expected.writeUInt32LE(json.length, 4); // low half of the int64 LE; high half stays 0
    assert.deepEqual(b, expected);
    assert.equal(b.readBigInt64LE(4), BigInt(json.length));
  });

  it('written in ONE write; raw bytes follow both ways', async () => {
    const [server, agent] = sessionPair();
    const incoming = nextStream(agent);
    const s = openProxyStream(server, { id: 'tn_1', clientAddr: '[::1]:1', proto: 'tcp', edgeType: '', passthroughTls: false });
    s.write('hello');
    s.end();
    const a = await incoming;
    const all = await readAll(a);
    const len = Number(all.readBigInt64LE(4));
    assert.equal((s as FakeStream).writes[0]!.length, 12 + len, 'whole preamble in the first write');
    assert.equal(JSON.parse(all.subarray(12, 12 + len).toString()).EdgeType, '');
    assert.equal(all.subarray(12 + len).toString(), 'hello');
  });
});

describe('commands', () => {
  it('RS: {} then FIN → ok; {"Error":…} then FIN → error', async () => {
    const [server, agent] = sessionPair();
    agent.on('stream', async (s: FakeStream) => {
      const req = await readAll(s);
      s.end(req.readUInt32BE(0) === StreamType.Update ? '{"Error":"updates disabled"}' : '{}');
    });
    assert.deepEqual(await sendCommand(server, 'restart'), { status: 'ok' });
    assert.deepEqual(await sendCommand(server, 'update', { version: '3.2.0', permitMajorVersion: false }), {
      status: 'error',
      error: 'updates disabled',
    });
  });

  it('request bytes: type + JSON in one write, then FIN', async () => {
    const [server, agent] = sessionPair();
    const incoming = nextStream(agent);
    const p = sendCommand(server, 'update', { version: '', permitMajorVersion: true }, { timeoutMs: 50 });
    const a = await incoming;
    const req = await readAll(a);
    assert.equal(req.toString('latin1'), '\x00\x00\x00\x06{"Version":"","PermitMajorVersion":true}');
    a.write('{"Error":""}'); // GO: no FIN
    assert.deepEqual(await p, { status: 'ok' });
    await delay(1100);
    assert.equal(a.receivedReset, MuxErrorCode.StreamCancelled, 'stream left open by GO is reset');
  });

  it('silent agent (GO without handler) → no-reply timeout', async () => {
    const [server, agent] = sessionPair();
    agent.on('stream', () => {});
    const t0 = Date.now();
    assert.deepEqual(await sendCommand(server, 'stop', undefined, { timeoutMs: 40 }), { status: 'no-reply', reason: 'timeout' });
    assert.ok(Date.now() - t0 >= 35);
  });

  it('StopTunnel: the agent FINs without a reply → no-reply eof', async () => {
    const [server, agent] = sessionPair();
    agent.on('stream', async (s: FakeStream) => {
      await readAll(s);
      s.end();
    });
    assert.deepEqual(await sendStopTunnel(server, { id: 'tn_1', message: 'm', errorCode: 308 }, { timeoutMs: 200 }), {
      status: 'no-reply',
      reason: 'eof',
    });
  });

  it('reset by the agent → no-reply closed; garbage → invalid', async () => {
    const [server, agent] = sessionPair();
    agent.on('stream', (s: FakeStream) => s.reset(MuxErrorCode.StreamRefused));
    assert.deepEqual(await sendCommand(server, 'stop', undefined, { timeoutMs: 200 }), { status: 'no-reply', reason: 'closed' });
    const [server2, agent2] = sessionPair();
    agent2.on('stream', (s: FakeStream) => s.end('[1]'));
    assert.deepEqual(await sendCommand(server2, 'stop', undefined, { timeoutMs: 200 }), { status: 'no-reply', reason: 'invalid' });
  });
});
