// @test-pass sqlite
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { setImmediate as immediate } from 'node:timers/promises';
import { ErrorCode, Flag, FrameType, MuxadoError, MuxadoSession, type MuxadoStream, encodeData } from '../../../src/tunnels/muxado/index.js';
import { RawPeer, memoryPair, quiet, until } from './helpers.js';

/** What a peer may make a session hold: `limitInput`, and a peer that sends without reading (issue 29 item 8). */
describe('muxado session: input limits', () => {
  it('limitInput: SYNs past its streams get RST AcceptQueueFull; DATA past its bytes → GOAWAY EnhanceYourCalm and close', async () => {
    const peer = new RawPeer({}, 'server');
    peer.session.limitInput({ streams: 2, bytes: 1000 });
    const streams: MuxadoStream[] = [];
    peer.session.on('stream', (s) => streams.push(quiet(s)));
    const closed = once(peer.session, 'close');
    for (const id of [3, 5, 7]) peer.send(encodeData(id, Flag.Syn, Buffer.alloc(100)));
    const rst = await peer.waitFrame((f) => f.type === FrameType.Rst, 'RST');
    assert.deepEqual([rst.streamId, rst.payload.readUInt32BE(0)], [7, ErrorCode.AcceptQueueFull]);
    assert.equal(streams.length, 2);
    peer.send(encodeData(3, 0, Buffer.alloc(600))); // 300 + 600 < 1000: fine
    await until(() => streams[0]!.bufferedLength >= 700, 1000, 'the data');
    assert.equal(peer.session.closed, false);
    peer.send(encodeData(5, 0, Buffer.alloc(200))); // 1100 > 1000
    const goAway = await peer.waitFrame((f) => f.type === FrameType.GoAway, 'GOAWAY');
    assert.equal(goAway.payload.readUInt32BE(4), ErrorCode.EnhanceYourCalm);
    const [error] = (await closed) as [MuxadoError];
    assert.equal(error.code, ErrorCode.EnhanceYourCalm);
  });

  it('limitInput(null) lifts it: the count starts again from nothing', async () => {
    const peer = new RawPeer({}, 'server');
    peer.session.limitInput({ streams: 1, bytes: 100 });
    const streams: MuxadoStream[] = [];
    peer.session.on('stream', (s) => streams.push(quiet(s).resume() as MuxadoStream));
    peer.send(encodeData(3, Flag.Syn, Buffer.alloc(50)));
    await until(() => streams.length === 1, 1000, 'the stream');
    peer.session.limitInput(null);
    for (const id of [5, 7, 9]) peer.send(encodeData(id, Flag.Syn, Buffer.alloc(10_000)));
    await until(() => streams.length === 4, 1000, 'three more streams');
    assert.equal(peer.session.closed, false);
    assert.equal(peer.frames.filter((f) => f.type === FrameType.Rst || f.type === FrameType.GoAway).length, 0);
    peer.session.close();
  });

  it('a peer that keeps sending while over 1 MiB of our answers waits unread is closed with EnhanceYourCalm', async () => {
    const [sessionEnd, peerEnd] = memoryPair();
    peerEnd.on('error', () => undefined); // the peer never reads: our WNDINCs pile up
    const session = new MuxadoSession(sessionEnd, { side: 'server' });
    session.on('stream', (s: MuxadoStream) => quiet(s).resume()); // consumed at once: one WNDINC per stream per tick
    const closed = once(session, 'close');
    const ids = Array.from({ length: 200 }, (_, i) => 3 + 2 * i);
    for (const id of ids) peerEnd.write(encodeData(id, Flag.Syn, Buffer.alloc(1)));
    for (let turn = 0; turn < 5_000 && !session.closed; turn++) {
      for (const id of ids) peerEnd.write(encodeData(id, 0, Buffer.alloc(1)));
      await immediate();
    }
    assert.equal(session.closed, true, 'closed');
    const [error] = (await closed) as [MuxadoError];
    assert.equal(error.code, ErrorCode.EnhanceYourCalm);
    assert.match(error.message, /without reading/);
    peerEnd.destroy();
  });
});
