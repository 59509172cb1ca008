// @test-pass sqlite
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import fc from 'fast-check';
import {
  ErrorCode,
  Flag,
  FrameType,
  MuxadoError,
  MuxadoSession,
  type MuxadoStream,
  encodeData,
  encodeGoAway,
  encodeRst,
  encodeWndInc,
} from '../../../src/tunnels/muxado/index.js';
import { RawPeer, quiet, pattern, readAll, sessionPair, settle, tcpPair, until, writeAll, memoryPair } from './helpers.js';

const WINDOW = 0x40000;

function echo(stream: MuxadoStream): void {
  stream.on('error', () => undefined);
  stream.pipe(stream);
}

describe('muxado session: exchange', () => {
  it('client and server exchange data both ways with half-close, ids by parity', async () => {
    const { server, client } = sessionPair();
    const serverStreams: MuxadoStream[] = [];
    server.on('stream', (s) => {
      serverStreams.push(s);
      echo(s);
    });
    const a = client.open();
    const b = client.open();
    assert.equal(a.id, 3);
    assert.equal(b.id, 5);
    const ra = readAll(a);
    a.end('hello');
    assert.equal((await ra).toString(), 'hello');
    const rb = readAll(b);
    b.end('world');
    assert.equal((await rb).toString(), 'world');
    assert.deepEqual(
      serverStreams.map((s) => s.id),
      [3, 5],
    );
    await until(() => server.streamCount === 0 && client.streamCount === 0, 2000, 'streams removed');

    const clientStreams: MuxadoStream[] = [];
    client.on('stream', (s) => {
      clientStreams.push(s);
      echo(s);
    });
    const c = server.open();
    assert.equal(c.id, 2);
    assert.equal(quiet(server.open()).id, 4);
    const rc = readAll(c);
    c.end('from server');
    assert.equal((await rc).toString(), 'from server');
    assert.equal(clientStreams[0]!.id, 2);
    server.close();
    client.close();
  });

  for (const transport of ['memory', 'tcp'] as const) {
    it(`10 MB byte-exact both directions at once (${transport})`, async () => {
      const pair = sessionPair({}, transport === 'tcp' ? await tcpPair() : memoryPair());
      const up = pattern(10 * 1024 * 1024, 11);
      const down = pattern(10 * 1024 * 1024, 12);
      const got = new Promise<Buffer>((resolve, reject) => {
        pair.server.on('stream', (s) => {
          s.on('error', reject);
          readAll(s).then(resolve, reject);
          writeAll(s, down, 100_000).catch(reject);
        });
      });
      const c = pair.client.open();
      const [received] = await Promise.all([readAll(c), writeAll(c, up, 64 * 1024)]);
      assert.ok(received.equals(down), 'server → client bytes differ');
      assert.ok((await got).equals(up), 'client → server bytes differ');
      await until(() => pair.server.streamCount === 0 && pair.client.streamCount === 0, 2000, 'streams removed');
      pair.client.close();
      pair.server.close();
    });
  }

  it('many concurrent streams, both directions, echoed byte-exact', async () => {
    const { server, client } = sessionPair();
    server.on('stream', echo);
    const n = 200;
    const jobs = [];
    for (let i = 0; i < n; i++) {
      const s = client.open();
      const data = pattern(20_000 + i * 97, i + 1);
      jobs.push(Promise.all([readAll(s), writeAll(s, data, 7000)]).then(([echoed]) => assert.ok(echoed.equals(data), `stream ${s.id}`)));
    }
    await Promise.all(jobs);
    await until(() => server.streamCount === 0 && client.streamCount === 0, 2000, 'streams removed');
    client.close();
    server.close();
  });

  it('respects transport backpressure: a slow transport never queues more than about a frame past its mark', async () => {
    const [a, b] = memoryPair(4096);
    const { server, client, serverTransport } = sessionPair({}, [a, b]);
    let maxQueued = 0;
    const origWrite = serverTransport.write.bind(serverTransport);
    (serverTransport as { write: typeof origWrite }).write = ((chunk: Buffer, ...rest: []) => {
      const r = origWrite(chunk, ...rest);
      maxQueued = Math.max(maxQueued, serverTransport.writableLength);
      return r;
    }) as typeof origWrite;
    const data = pattern(3 * 1024 * 1024, 3);
    const received = new Promise<Buffer>((resolve) => client.once('stream', (s) => resolve(readAll(s))));
    const s = quiet(server.open());
    await writeAll(s, data, 200_000);
    s.end();
    assert.ok((await received).equals(data));
    assert.ok(maxQueued <= 4096 + 65536 + 64, `transport queue reached ${maxQueued}`);
    server.close();
    client.close();
  });
});

describe('muxado session: flow control', () => {
  it('a reader that reads nothing: receiver buffers ≤ window, writer sees write() false and waits', async () => {
    const { server, client } = sessionPair();
    let remote: MuxadoStream | undefined;
    server.on('stream', (s) => {
      remote = quiet(s);
      s.pause();
    });
    const c = quiet(client.open());
    const data = pattern(10 * 1024 * 1024, 5);
    let sawFalse = false;
    let written = 0;
    let drained = false;
    c.on('drain', () => {
      drained = true;
    });
    // write as a misbehaving producer would, until write() says stop
    while (written < data.length) {
      const ok = c.write(data.subarray(written, written + 65536));
      written += 65536;
      if (!ok) {
        sawFalse = true;
        break;
      }
    }
    assert.ok(sawFalse, 'write() never returned false');
    await settle(20);
    assert.ok(remote, 'no stream on the server');
    assert.ok(remote.bufferedLength <= WINDOW, `receiver buffered ${remote.bufferedLength}`);
    assert.equal(remote.bufferedLength, WINDOW, 'the peer should have filled exactly the window');
    assert.equal(drained, false, 'drain without the reader reading');
    assert.ok(c.writableLength > 0);

    // now the reader reads: everything arrives
    const got = readAll(remote);
    remote.resume(); // explicitly paused streams stay paused when a 'data' listener is added
    const rest = writeAll(c, data.subarray(written));
    await rest;
    const all = await got;
    assert.ok(all.equals(data));
    server.close();
    client.close();
  });

  it('the sender never exceeds the window and resumes on WNDINC; WNDINC 0 is ignored', async () => {
    const peer = new RawPeer({}, 'server');
    const s = peer.session.open();
    s.on('error', () => undefined);
    const data = pattern(WINDOW * 3, 9);
    let finished = false;
    void writeAll(s, data).then(() => {
      finished = true;
    });
    const dataBytes = () => peer.frames.filter((f) => f.type === FrameType.Data).reduce((n, f) => n + f.payload.length, 0);
    await until(() => dataBytes() === WINDOW, 2000, 'first window');
    await settle(10);
    assert.equal(dataBytes(), WINDOW);
    const first = peer.frames.find((f) => f.type === FrameType.Data)!;
    assert.equal(first.streamId, 2);
    assert.equal(first.flags, Flag.Syn, 'SYN rides on the first DATA frame');
    assert.equal(peer.frames.filter((f) => (f.flags & Flag.Syn) !== 0).length, 1);
    peer.send(encodeWndInc(2, 1000));
    await until(() => dataBytes() === WINDOW + 1000, 2000, 'after WNDINC 1000');
    // a raw WNDINC 0 must not crash or change anything
    peer.send(Buffer.from([0, 0, 4, 0x20, 0, 0, 0, 2, 0, 0, 0, 0]));
    await settle(10);
    assert.equal(dataBytes(), WINDOW + 1000);
    peer.send(encodeWndInc(2, WINDOW * 3));
    await until(() => finished, 2000, 'write finished');
    await until(() => peer.frames.some((f) => f.type === FrameType.Data && (f.flags & Flag.Fin) !== 0), 2000, 'FIN');
    assert.equal(dataBytes(), data.length);
    assert.ok(Buffer.concat(peer.frames.filter((f) => f.type === FrameType.Data).map((f) => f.payload)).equals(data));
    peer.session.close();
  });

  it('grants WNDINC only for consumed bytes, never 0, and never while the reader is paused', async () => {
    const peer = new RawPeer({}, 'server');
    let stream: MuxadoStream | undefined;
    peer.session.on('stream', (s) => {
      stream = quiet(s);
      s.pause();
    });
    const chunk = pattern(50_000, 4);
    peer.send(encodeData(3, Flag.Syn, chunk));
    for (let i = 0; i < 4; i++) peer.send(encodeData(3, 0, chunk));
    await until(() => stream !== undefined && stream.bufferedLength === 250_000, 2000, 'data buffered');
    await settle(10);
    assert.equal(peer.frames.filter((f) => f.type === FrameType.WndInc).length, 0, 'granted without consumption');

    // consume 70 000 bytes in paused mode
    let consumed = 0;
    while (consumed < 70_000) {
      const got = stream!.read(Math.min(10_000, 70_000 - consumed)) as Buffer | null;
      assert.ok(got);
      consumed += got.length;
    }
    await settle(10);
    const incs = () => peer.frames.filter((f) => f.type === FrameType.WndInc).map((f) => f.payload.readUInt32BE(0));
    assert.ok(incs().length >= 1);
    assert.ok(incs().every((n) => n > 0), 'WNDINC 0 sent');
    assert.equal(
      incs().reduce((a, b) => a + b, 0),
      70_000,
    );
    // flowing mode consumption is granted too, and all frames stay non-zero
    stream!.resume();
    await settle(10);
    assert.equal(
      incs().reduce((a, b) => a + b, 0),
      250_000,
    );
    assert.ok(incs().every((n) => n > 0));
    assert.ok(peer.frames.every((f) => f.type <= 3));
    peer.session.close();
  });

  it('a peer that overruns the window gets RST FlowControl on that stream; the session stays', async () => {
    const peer = new RawPeer({}, 'server');
    const errors: unknown[] = [];
    let stream: MuxadoStream | undefined;
    peer.session.on('stream', (s) => {
      stream = s;
      s.pause();
      s.on('error', (e) => errors.push(e));
    });
    peer.send(encodeData(3, Flag.Syn, pattern(WINDOW - 10)));
    peer.send(encodeData(3, 0, pattern(11)));
    const rst = await peer.waitFrame((f) => f.type === FrameType.Rst, 'RST');
    assert.equal(rst.streamId, 3);
    assert.equal(rst.payload.readUInt32BE(0), ErrorCode.FlowControl);
    await until(() => errors.length === 1, 1000, 'stream error');
    assert.ok(errors[0] instanceof MuxadoError && errors[0].code === ErrorCode.FlowControl);
    assert.ok(stream!.destroyed);
    assert.equal(peer.session.closed, false);
    assert.equal(peer.session.streamCount, 0);
    // the session still works
    peer.send(encodeData(5, Flag.Syn, Buffer.from('ok')));
    await until(() => stream!.id === 5, 1000, 'next stream');
    // a SYN whose first frame alone exceeds the window
    peer.send(encodeData(7, Flag.Syn, pattern(WINDOW + 1)));
    const rst7 = await peer.waitFrame((f) => f.type === FrameType.Rst && f.streamId === 7, 'RST 7');
    assert.equal(rst7.payload.readUInt32BE(0), ErrorCode.FlowControl);
    peer.session.close();
  });
});

describe('muxado session: stream lifecycle on the wire', () => {
  it('DATA on an unknown stream is answered with one RST StreamClosed; RSTs and lone FINs are not answered', async () => {
    const peer = new RawPeer({}, 'server');
    peer.send(encodeData(99, 0, Buffer.from('x')));
    peer.send(encodeRst(101, ErrorCode.StreamCancelled));
    peer.send(encodeData(103, Flag.Fin));
    peer.send(encodeWndInc(105, 10));
    peer.send(encodeData(2, 0, Buffer.from('y'))); // our parity, never opened
    await until(() => peer.frames.length >= 2, 1000, 'RSTs');
    await settle(10);
    assert.deepEqual(
      peer.frames.map((f) => [f.type, f.streamId, f.payload.readUInt32BE(0)]),
      [
        [FrameType.Rst, 99, ErrorCode.StreamClosed],
        [FrameType.Rst, 2, ErrorCode.StreamClosed],
      ],
    );
    assert.equal(peer.session.closed, false);
    peer.session.close();
  });

  it('a duplicate FIN from the peer is ignored; we send exactly one FIN', async () => {
    const peer = new RawPeer({}, 'server');
    let stream: MuxadoStream | undefined;
    peer.session.on('stream', (s) => {
      stream = s;
    });
    peer.send(encodeData(3, Flag.Syn, Buffer.from('req')));
    peer.send(encodeData(3, Flag.Fin));
    peer.send(encodeData(3, Flag.Fin));
    await until(() => stream !== undefined, 1000, 'stream');
    const body = await readAll(stream!);
    assert.equal(body.toString(), 'req');
    await settle(5);
    assert.equal(peer.frames.filter((f) => f.type === FrameType.Data).length, 0, 'a FIN answered with a FIN');
    stream!.end('resp');
    await until(() => peer.session.streamCount === 0, 1000, 'stream removed after both FINs');
    peer.send(encodeData(3, Flag.Fin)); // late FIN after removal: ignored as well
    await settle(10);
    const fins = peer.frames.filter((f) => f.type === FrameType.Data && (f.flags & Flag.Fin) !== 0);
    assert.equal(fins.length, 1);
    assert.equal(peer.frames.filter((f) => f.type === FrameType.Rst).length, 0);
    assert.equal(Buffer.concat(peer.frames.filter((f) => f.type === FrameType.Data).map((f) => f.payload)).toString(), 'resp');
    peer.session.close();
  });

  it('DATA after the peer\'s FIN → RST StreamClosed and the stream fails; the session stays', async () => {
    const peer = new RawPeer({}, 'server');
    const errors: MuxadoError[] = [];
    peer.session.on('stream', (s) => s.on('error', (e: MuxadoError) => errors.push(e)));
    peer.send(encodeData(3, Flag.Syn | Flag.Fin, Buffer.from('a')), encodeData(3, 0, Buffer.from('late')));
    const rst = await peer.waitFrame((f) => f.type === FrameType.Rst, 'RST');
    assert.deepEqual([rst.streamId, rst.payload.readUInt32BE(0)], [3, ErrorCode.StreamClosed]);
    await until(() => errors.length === 1, 1000, 'stream error');
    assert.equal(errors[0]!.code, ErrorCode.StreamClosed);
    assert.equal(peer.session.closed, false);
    assert.equal(peer.session.streamCount, 0);
    peer.session.close();
  });

  it('consumption through async iteration is granted (more than a window flows)', async () => {
    const { server, client } = sessionPair();
    const data = pattern(3 * WINDOW + 123, 21);
    const got = new Promise<Buffer>((resolve) => {
      server.once('stream', async (s: MuxadoStream) => {
        const parts: Buffer[] = [];
        for await (const chunk of s) parts.push(chunk as Buffer);
        resolve(Buffer.concat(parts));
      });
    });
    const c = quiet(client.open());
    await writeAll(c, data);
    assert.ok((await got).equals(data));
    server.close();
    client.close();
  });

  it('end() without data sends one empty SYN+FIN; a stream never written and destroyed sends nothing', async () => {
    const peer = new RawPeer({}, 'server');
    const a = quiet(peer.session.open());
    a.end();
    const f = await peer.waitFrame((x) => x.streamId === a.id, 'SYN+FIN');
    assert.equal(f.flags, Flag.Syn | Flag.Fin);
    assert.equal(f.payload.length, 0);
    const b = peer.session.open();
    b.destroy();
    await settle(10);
    assert.equal(peer.frames.filter((x) => x.streamId === b.id).length, 0);
    peer.session.close();
  });

  it('destroying an unfinished stream sends FIN then RST StreamCancelled; reset(code) sends only RST(code)', async () => {
    const peer = new RawPeer({}, 'server');
    const a = peer.session.open();
    a.write('x');
    await peer.waitFrame((f) => f.streamId === a.id, 'SYN');
    a.destroy();
    await until(() => peer.frames.filter((f) => f.streamId === a.id).length === 3, 1000, 'FIN + RST');
    const fa = peer.frames.filter((f) => f.streamId === a.id);
    assert.equal(fa[1]!.type, FrameType.Data);
    assert.equal(fa[1]!.flags, Flag.Fin);
    assert.equal(fa[2]!.type, FrameType.Rst);
    assert.equal(fa[2]!.payload.readUInt32BE(0), ErrorCode.StreamCancelled);
    assert.equal(peer.session.streamCount, 0);

    const b = peer.session.open();
    b.write('y');
    b.reset(ErrorCode.StreamRefused);
    await until(() => peer.frames.filter((f) => f.streamId === b.id).length === 2, 1000, 'RST');
    const fb = peer.frames.filter((f) => f.streamId === b.id);
    assert.equal(fb[1]!.type, FrameType.Rst);
    assert.equal(fb[1]!.payload.readUInt32BE(0), ErrorCode.StreamRefused);
    await settle(10);
    assert.equal(peer.frames.filter((f) => f.streamId === b.id).length, 2);
    peer.session.close();
  });

  it('a peer RST destroys the stream with MuxadoError(code) and is never answered', async () => {
    const { server, client } = sessionPair();
    const got = new Promise<MuxadoStream>((resolve) => server.once('stream', resolve));
    const c = client.open();
    c.write('hi');
    const s = await got;
    const err = once(c, 'error');
    s.reset(ErrorCode.StreamReset);
    const [e] = (await err) as [MuxadoError];
    assert.ok(e instanceof MuxadoError);
    assert.equal(e.code, ErrorCode.StreamReset);
    await until(() => client.streamCount === 0 && server.streamCount === 0, 1000, 'removed');
    server.close();
    client.close();
  });

  it('refuses SYNs past maxIncomingStreams with RST AcceptQueueFull and keeps the session', async () => {
    const peer = new RawPeer({ maxIncomingStreams: 3 }, 'server');
    const streams: MuxadoStream[] = [];
    peer.session.on('stream', (s) => streams.push(quiet(s)));
    for (let id = 3; id <= 11; id += 2) peer.send(encodeData(id, Flag.Syn, Buffer.from('a')));
    await until(() => peer.frames.length === 2, 1000, 'RSTs');
    assert.deepEqual(
      peer.frames.map((f) => [f.type, f.streamId, f.payload.readUInt32BE(0)]),
      [
        [FrameType.Rst, 9, ErrorCode.AcceptQueueFull],
        [FrameType.Rst, 11, ErrorCode.AcceptQueueFull],
      ],
    );
    assert.equal(streams.length, 3);
    assert.equal(peer.session.closed, false);
    streams[0]!.destroy();
    peer.send(encodeData(13, Flag.Syn, Buffer.from('a')));
    await until(() => streams.length === 4, 1000, 'a slot freed');
    peer.session.close();
  });
});

describe('muxado session: protocol errors and GOAWAY', () => {
  async function expectProtocolGoAway(peer: RawPeer, code: number = ErrorCode.Protocol): Promise<void> {
    const g = await peer.waitFrame((f) => f.type === FrameType.GoAway, 'GOAWAY');
    assert.equal(g.payload.readUInt32BE(4), code);
    await until(() => peer.session.closed && peer.ended, 1000, 'session closed');
  }

  it('a SYN with the wrong parity → GOAWAY Protocol and close', async () => {
    const peer = new RawPeer({}, 'server');
    const closed = once(peer.session, 'close');
    peer.send(encodeData(4, Flag.Syn, Buffer.from('x')));
    await expectProtocolGoAway(peer);
    const [err] = (await closed) as [MuxadoError];
    assert.equal(err.code, ErrorCode.Protocol);
  });

  it('a SYN reusing a live or closed id → GOAWAY Protocol; out-of-order new ids are fine', async () => {
    const peer = new RawPeer({}, 'server');
    const ids: number[] = [];
    peer.session.on('stream', (s) => {
      ids.push(s.id);
      s.on('error', () => undefined);
    });
    peer.send(encodeData(7, Flag.Syn, Buffer.from('x')));
    peer.send(encodeData(3, Flag.Syn, Buffer.from('x'))); // skipped id, first use: fine
    peer.send(encodeData(5, Flag.Syn | Flag.Fin));
    await until(() => ids.length === 3, 1000, 'streams');
    assert.deepEqual(ids, [7, 3, 5]);
    peer.send(encodeData(3, Flag.Syn, Buffer.from('again')));
    await expectProtocolGoAway(peer);
    const g = peer.frames.find((f) => f.type === FrameType.GoAway)!;
    assert.equal(g.payload.readUInt32BE(0), 7, 'last stream id');

    const peer2 = new RawPeer({}, 'server');
    peer2.session.on('stream', (s) => s.reset(ErrorCode.StreamRefused));
    peer2.send(encodeData(3, Flag.Syn, Buffer.from('x')));
    await peer2.waitFrame((f) => f.type === FrameType.Rst, 'RST');
    peer2.send(encodeData(3, Flag.Syn, Buffer.from('x'))); // closed id reused
    await expectProtocolGoAway(peer2);
  });

  it('a frame type above 3 → GOAWAY Protocol and close (or ignored with ignoreUnknownFrameTypes)', async () => {
    const peer = new RawPeer({}, 'server');
    peer.send(Buffer.from([0, 0, 2, 0x50, 0, 0, 0, 3, 1, 2]));
    await expectProtocolGoAway(peer);
    assert.ok(peer.frames.every((f) => f.type <= 3));

    const lenient = new RawPeer({ ignoreUnknownFrameTypes: true }, 'server');
    const got: string[] = [];
    lenient.session.on('stream', (s) => quiet(s).on('data', (d: Buffer) => got.push(d.toString())));
    lenient.send(Buffer.from([0, 0, 2, 0x50, 0, 0, 0, 3, 1, 2]), encodeData(3, Flag.Syn, Buffer.from('after')));
    await until(() => got.join('') === 'after', 1000, 'data after unknown frame');
    assert.equal(lenient.session.closed, false);
    lenient.session.close();
  });

  it('malformed control frames and oversized DATA close the session with GOAWAY', async () => {
    const p1 = new RawPeer({}, 'server');
    p1.send(Buffer.from([0, 0, 2, 0x00, 0, 0, 0, 3, 0, 0])); // RST of length 2
    await expectProtocolGoAway(p1, ErrorCode.FrameSize);
    const p2 = new RawPeer({ maxFrameSize: 1000 }, 'server');
    p2.send(encodeData(3, Flag.Syn, Buffer.alloc(1001)));
    await expectProtocolGoAway(p2, ErrorCode.FrameSize);
  });

  it('a GOAWAY from the peer is terminal, even with a lying length: nothing after it is parsed', async () => {
    const peer = new RawPeer({}, 'server');
    const errors: MuxadoError[] = [];
    peer.session.on('stream', (s) => s.on('error', (e: MuxadoError) => errors.push(e)));
    peer.send(encodeData(3, Flag.Syn, Buffer.from('open')));
    await until(() => peer.session.streamCount === 1, 1000, 'stream');
    const goaway = once(peer.session, 'goaway');
    const closed = once(peer.session, 'close');
    let streamsAfter = 0;
    peer.session.on('stream', () => streamsAfter++);
    const debug = Buffer.from('invalid frame');
    // RS: length counts only the debug text
    peer.send(
      Buffer.concat([Buffer.from([0, 0, debug.length, 0x30, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, ErrorCode.Protocol]), debug, encodeData(5, Flag.Syn, Buffer.from('x')), Buffer.from([0xde, 0xad])]),
    );
    const [code, text] = (await goaway) as [number, string];
    assert.equal(code, ErrorCode.Protocol);
    assert.equal(typeof text, 'string');
    const [err] = (await closed) as [MuxadoError];
    assert.equal(err.code, ErrorCode.RemoteGoneAway);
    await settle(5);
    assert.equal(streamsAfter, 0);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.code, ErrorCode.RemoteGoneAway);
    assert.ok(peer.session.closed);
    assert.ok(peer.frames.every((f) => f.type !== FrameType.GoAway), 'answered a GOAWAY with a GOAWAY');
  });

  it('goAway(): GOAWAY(last peer stream id, 0, "no error"), then new peer streams are refused', async () => {
    const peer = new RawPeer({}, 'server');
    peer.session.on('stream', quiet);
    peer.send(encodeData(3, Flag.Syn, Buffer.from('x')), encodeData(5, Flag.Syn, Buffer.from('x')));
    await until(() => peer.session.streamCount === 2, 1000, 'streams');
    peer.session.goAway();
    const g = await peer.waitFrame((f) => f.type === FrameType.GoAway, 'GOAWAY');
    assert.equal(g.length, 8 + 'no error'.length);
    assert.equal(g.payload.readUInt32BE(0), 5);
    assert.equal(g.payload.readUInt32BE(4), 0);
    assert.equal(g.payload.subarray(8).toString(), 'no error');
    assert.throws(() => peer.session.open(), MuxadoError);
    peer.send(encodeData(7, Flag.Syn, Buffer.from('x')));
    const rst = await peer.waitFrame((f) => f.type === FrameType.Rst, 'RST');
    assert.deepEqual([rst.streamId, rst.payload.readUInt32BE(0)], [7, ErrorCode.StreamRefused]);
    peer.session.goAway(); // once only
    peer.session.close();
    await until(() => peer.ended, 1000, 'transport ended');
    assert.equal(peer.frames.filter((f) => f.type === FrameType.GoAway).length, 1);
  });
});

describe('muxado session: closing', () => {
  it('transport end → session closes once, streams destroyed with MuxadoError(PeerEOF)', async () => {
    const peer = new RawPeer({}, 'server');
    const errors: MuxadoError[] = [];
    peer.session.on('stream', (s) => s.on('error', (e: MuxadoError) => errors.push(e)));
    const local = peer.session.open();
    local.on('error', (e: MuxadoError) => errors.push(e));
    peer.send(encodeData(3, Flag.Syn, Buffer.from('x')));
    await until(() => peer.session.streamCount === 2, 1000, 'streams');
    let closes = 0;
    let closeErr: MuxadoError | undefined;
    peer.session.on('close', (e?: Error) => {
      closes++;
      closeErr = e as MuxadoError;
    });
    peer.transport.end();
    await until(() => errors.length === 2, 1000, 'stream errors');
    assert.ok(errors.every((e) => e instanceof MuxadoError && e.code === ErrorCode.PeerEOF));
    assert.equal(closes, 1);
    assert.equal(closeErr?.code, ErrorCode.PeerEOF);
    assert.equal(peer.session.streamCount, 0);
    peer.session.close();
    await settle(5);
    assert.equal(closes, 1);
    assert.throws(() => peer.session.open(), (e: unknown) => e instanceof MuxadoError && e.code === ErrorCode.SessionClosed);
  });

  it('transport error / destroy → session closes, streams get MuxadoError(SessionClosed)', async () => {
    const { server, client, clientTransport } = sessionPair();
    const s = client.open();
    const err = once(s, 'error');
    const closed = once(client, 'close');
    clientTransport.destroy(new Error('boom'));
    const [e] = (await err) as [MuxadoError];
    assert.equal(e.code, ErrorCode.SessionClosed);
    await closed;
    assert.ok(client.closed);
    await until(() => server.closed, 1000, 'other side closed');
  });

  it('close() destroys every stream and the transport; idempotent; "close" exactly once', async () => {
    const { server, client, serverTransport } = sessionPair();
    const a = server.open();
    const errs: MuxadoError[] = [];
    a.on('error', (e: MuxadoError) => errs.push(e));
    let closes = 0;
    server.on('close', () => closes++);
    server.close();
    server.close();
    assert.ok(server.closed);
    await until(() => serverTransport.destroyed, 1000, 'transport destroyed');
    await until(() => client.closed, 1000, 'peer sees EOF');
    assert.equal(closes, 1);
    assert.equal(errs.length, 1);
    assert.equal(errs[0]!.code, ErrorCode.SessionClosed);
  });

  it('a stream whose session closes mid-write fails the write, no hang', async () => {
    const { server, client } = sessionPair();
    server.on('stream', (s) => quiet(s).pause());
    const c = client.open();
    c.on('error', () => undefined);
    const done = new Promise<Error | null | undefined>((resolve) => c.write(pattern(WINDOW * 2), resolve));
    await settle(10);
    client.close();
    const e = await done;
    assert.ok(e instanceof Error);
    server.close();
  });
});

describe('muxado session: robustness', () => {
  it('random fragmentation of the peer byte stream delivers the same data (fast-check)', async () => {
    const payloads = [pattern(3000, 1), pattern(70_000, 2), Buffer.from('tail')];
    const wire = Buffer.concat([
      encodeData(3, Flag.Syn, payloads[0]),
      encodeData(5, Flag.Syn, Buffer.from('other')),
      encodeData(3, 0, payloads[1]),
      encodeWndInc(3, 100),
      encodeData(3, Flag.Fin, payloads[2]),
      encodeData(5, Flag.Fin),
    ]);
    const expected = Buffer.concat(payloads);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: wire.length }), { maxLength: 30 }), async (cuts) => {
        const peer = new RawPeer({}, 'server');
        const bodies = new Map<number, Promise<Buffer>>();
        peer.session.on('stream', (s) => bodies.set(s.id, readAll(s)));
        let prev = 0;
        for (const cut of [...cuts].sort((a, b) => a - b)) {
          peer.send(wire.subarray(prev, cut));
          prev = cut;
        }
        peer.send(wire.subarray(prev));
        await until(() => bodies.size === 2, 2000, 'streams');
        assert.ok((await bodies.get(3)!).equals(expected));
        assert.equal((await bodies.get(5)!).toString(), 'other');
        assert.equal(peer.session.closed, false);
        peer.session.close();
      }),
      { numRuns: 40 },
    );
  });

  it('arbitrary bytes never throw out of the session (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), async (chunks) => {
        const peer = new RawPeer({}, 'server');
        peer.session.on('stream', (s) => {
          s.on('error', () => undefined);
          s.resume();
        });
        const valid = encodeData(3, Flag.Syn, Buffer.from('x'));
        peer.send(valid);
        for (const c of chunks) peer.send(Buffer.from(c));
        await settle(3);
        assert.ok(peer.frames.every((f) => f.type <= 3 && !(f.type === FrameType.WndInc && f.payload.readUInt32BE(0) === 0)));
        peer.session.close();
      }),
      { numRuns: 100 },
    );
  });

  it('a flood of 1-byte frames to an unread stream stays bounded and coalesced', async () => {
    const peer = new RawPeer({}, 'server');
    let stream: MuxadoStream | undefined;
    peer.session.on('stream', (s) => {
      stream = quiet(s);
      s.pause();
    });
    peer.send(encodeData(3, Flag.Syn, Buffer.from('a')));
    const frames: Buffer[] = [];
    for (let i = 0; i < 20_000; i++) frames.push(encodeData(3, 0, Buffer.from([i & 0xff])));
    peer.send(Buffer.concat(frames));
    await until(() => stream !== undefined && stream.bufferedLength === 20_001, 2000, 'buffered');
    const state = (stream as unknown as { _readableState: { buffer: { length: number } } })._readableState;
    assert.ok(state.buffer.length < 20, `readable holds ${state.buffer.length} chunks`);
    const got = await new Promise<Buffer>((resolve) => {
      const parts: Buffer[] = [];
      stream!.on('data', (d: Buffer) => {
        parts.push(d);
        if (parts.reduce((n, p) => n + p.length, 0) === 20_001) resolve(Buffer.concat(parts));
      });
      stream!.resume();
    });
    assert.equal(got[0], 'a'.charCodeAt(0));
    for (let i = 0; i < 20_000; i++) assert.equal(got[i + 1], i & 0xff);
    peer.session.close();
  });

  it('small frames to a reader doing partial paused-mode reads are all delivered (ping-pong, no stall)', async () => {
    const peer = new RawPeer({}, 'server');
    let stream: MuxadoStream | undefined;
    const got: Buffer[] = [];
    peer.session.on('stream', (s) => {
      stream = quiet(s);
      s.on('readable', () => {
        let c: Buffer | null;
        while ((c = s.read(3) as Buffer | null) !== null) got.push(c);
      });
    });
    const total = () => got.reduce((n, b) => n + b.length, 0);
    peer.send(encodeData(3, Flag.Syn, Buffer.from('abcd')));
    let expected = 3; // read(3) leaves 1 byte until more comes
    await until(() => total() === expected, 1000, 'first read');
    for (let i = 0; i < 50; i++) {
      peer.send(encodeData(3, 0, Buffer.from('wxyz')));
      expected = Math.floor((4 + 4 * (i + 1)) / 3) * 3;
      await until(() => total() === expected, 1000, `round ${i}`);
    }
    peer.send(encodeData(3, Flag.Fin));
    await until(() => stream!.readableEnded || total() === 4 + 200, 1000, 'end');
    peer.session.close();
  });

  it('sends a GOAWAY on an RST-provoking flood when the peer does not read', async () => {
    const peer = new RawPeer({}, 'server');
    peer.transport.pause(); // the peer never reads what we send
    const bad: Buffer[] = [];
    for (let i = 0; i < 200_000; i++) bad.push(encodeData(2 * i + 1001, 0, Buffer.from('x')));
    const closed = once(peer.session, 'close');
    peer.send(Buffer.concat(bad));
    const [e] = (await closed) as [MuxadoError];
    assert.equal(e.code, ErrorCode.EnhanceYourCalm);
    peer.transport.destroy();
  });
});

describe('muxado session: ACK nudges (nudgeAcks)', () => {
  const nudges = (peer: RawPeer) => peer.frames.filter((f) => f.type === FrameType.WndInc && f.payload.readUInt32BE(0) === 1);

  it('input answered with nothing gets a 1-byte WNDINC on a stream the peer can write to', async () => {
    const peer = new RawPeer({ nudgeAcks: true }, 'server');
    let accepted: MuxadoStream | undefined;
    peer.session.on('stream', (s) => {
      accepted = quiet(s);
      s.pause(); // nothing consumed, so nothing granted: the SYN itself is input answered with nothing
    });
    peer.send(encodeData(3, Flag.Syn, Buffer.from('beat')));
    const first = await peer.waitFrame((f) => f.type === FrameType.WndInc, 'nudge after SYN');
    assert.equal(first.streamId, 3);
    assert.equal(first.payload.readUInt32BE(0), 1);

    // our own stream: its data out, then the peer's WNDINC for it — which we answer with a nudge
    const local = quiet(peer.session.open());
    local.write(Buffer.from('hello'));
    await peer.waitFrame((f) => f.type === FrameType.Data && f.streamId === 2, 'our data');
    const before = nudges(peer).length;
    peer.send(encodeWndInc(2, 5));
    await until(() => nudges(peer).length === before + 1, 1000, 'nudge after WNDINC');
    await settle(10);
    assert.equal(nudges(peer).length, before + 1, 'one nudge per read');

    // the nudged bytes are real window: the peer may fill 256 KiB plus what it was granted
    const granted = nudges(peer).filter((f) => f.streamId === 3).length;
    peer.send(encodeData(3, 0, pattern(WINDOW - 4 + granted)));
    await until(() => accepted!.bufferedLength === WINDOW + granted, 2000, 'window filled');
    await settle(10);
    assert.equal(peer.frames.filter((f) => f.type === FrameType.Rst).length, 0, 'a nudged byte was refused');
    peer.session.close();
  });

  it('once one of our streams is gone, nudges go to its id (ignored by both families), not into a window', async () => {
    const peer = new RawPeer({ nudgeAcks: true }, 'server');
    peer.session.on('stream', (s) => quiet(s).pause());
    const local = quiet(peer.session.open());
    local.end(Buffer.from('bye'));
    await peer.waitFrame((f) => f.type === FrameType.Data && f.streamId === 2 && (f.flags & Flag.Fin) !== 0, 'our FIN');
    peer.send(encodeData(2, Flag.Fin, Buffer.alloc(0))); // both FINs: stream 2 is gone; the read is answered with nothing
    const first = await peer.waitFrame((f) => f.type === FrameType.WndInc, 'nudge');
    assert.deepEqual([first.streamId, first.payload.readUInt32BE(0)], [2, 1]);
    peer.send(encodeData(3, Flag.Syn, Buffer.from('beat'))); // to a paused reader: answered with nothing again
    await until(() => nudges(peer).length === 2, 1000, 'second nudge');
    assert.ok(nudges(peer).every((f) => f.streamId === 2));
    // stream 3 got no extra window: one byte past 256 KiB is refused
    peer.send(encodeData(3, 0, pattern(WINDOW - 4 + 1)));
    const rst = await peer.waitFrame((f) => f.type === FrameType.Rst && f.streamId === 3, 'RST FlowControl');
    assert.equal(rst.payload.readUInt32BE(0), ErrorCode.FlowControl);
    peer.session.close();
  });

  it('no nudge when the input was answered (a grant), nor when nudgeAcks is off', async () => {
    const peer = new RawPeer({ nudgeAcks: true }, 'server');
    peer.session.on('stream', (s) => quiet(s).resume());
    peer.send(encodeData(3, Flag.Syn, pattern(1000)));
    await peer.waitFrame((f) => f.type === FrameType.WndInc, 'grant');
    peer.send(encodeData(3, 0, pattern(2000)));
    await until(() => peer.frames.filter((f) => f.type === FrameType.WndInc).length === 2, 1000, 'second grant');
    await settle(10);
    assert.deepEqual(
      peer.frames.filter((f) => f.type === FrameType.WndInc).map((f) => f.payload.readUInt32BE(0)),
      [1000, 2000],
    );
    peer.session.close();

    const off = new RawPeer({}, 'server');
    off.session.on('stream', (s) => quiet(s).pause());
    off.send(encodeData(3, Flag.Syn, Buffer.from('beat')));
    const local = quiet(off.session.open());
    local.write(Buffer.from('hello'));
    await off.waitFrame((f) => f.type === FrameType.Data && f.streamId === 2, 'our data');
    off.send(encodeWndInc(2, 5));
    await settle(20);
    assert.equal(off.frames.filter((f) => f.type === FrameType.WndInc).length, 0);
    off.session.close();
  });
});

describe('muxado session: transportBuffer', () => {
  it('DATA queues on a transport past its high-water mark up to transportBuffer, then waits for drain; every byte arrives', async () => {
    const FRAME = 65536 + 8; // maxSendFrameSize's payload and its header
    for (const [transportBuffer, expected] of [[0, FRAME], [WINDOW, 4 * FRAME]] as const) {
      const [a, b] = memoryPair(16 * 1024);
      b.pause(); // nobody reads the far end yet: whatever was written stays queued
      let handed = 0;
      const write = a.write.bind(a) as (chunk: Buffer) => boolean;
      a.write = ((chunk: Buffer) => ((handed += chunk.length), write(chunk))) as typeof a.write;
      const session = new MuxadoSession(a, { side: 'server', transportBuffer });
      const s = quiet(session.open());
      const data = pattern(2 * WINDOW, 3);
      const sent = writeAll(s, data);
      await settle(20);
      assert.equal(handed, expected, `bytes handed to the transport with transportBuffer ${transportBuffer}`);

      const reader = new MuxadoSession(b, { side: 'client' });
      b.resume(); // explicitly paused: a 'data' listener alone does not resume it
      const accepted = await new Promise<MuxadoStream>((resolve) => reader.once('stream', (r) => resolve(quiet(r))));
      const got = readAll(accepted);
      await sent;
      s.end();
      assert.ok((await got).equals(data), `data with transportBuffer ${transportBuffer}`);
      session.close();
      reader.close();
    }
  });
});

describe('muxado session: output batching', () => {
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** A session pair whose server transport keeps every chunk it writes; the client reads all. */
  const recordedPair = () => {
    const pair = sessionPair();
    const recorder = pair.serverTransport as unknown as { record: boolean; written: Buffer[] };
    recorder.record = true;
    pair.client.on('stream', (s) => quiet(s).resume());
    return { ...pair, written: recorder.written };
  };

  it('frames of one turn leave at its end; holdFlush() keeps them for the next turn’s to join', async () => {
    for (const hold of [false, true]) {
      const { server, client, written } = recordedPair();
      const stream = quiet(server.open());
      stream.write(Buffer.from('header'));
      if (hold) server.holdFlush();
      await turn();
      assert.equal(written.length, hold ? 0 : 1, hold ? 'held past the first turn' : 'sent at the first turn’s end');
      stream.write(Buffer.from('first bytes'));
      await turn();
      const sent = Buffer.concat(written);
      assert.ok(sent.includes('header') && sent.includes('first bytes'), 'both frames sent by the second turn’s end');
      server.close();
      client.close();
    }
  });

  it('holdFlush() asked every turn holds frames one extra turn only, never longer', async () => {
    const { server, client, written } = recordedPair();
    const first = quiet(server.open());
    first.write(Buffer.from('first'));
    server.holdFlush();
    // a new stream asking to hold in each of the next turns (connections arriving all the time)
    for (let i = 0; i < 2; i++) {
      await turn();
      const next = quiet(server.open());
      next.write(Buffer.from(`next ${i}`));
      server.holdFlush();
    }
    assert.ok(Buffer.concat(written).includes('first'), 'the first frame left by the end of the second turn');
    server.close();
    client.close();
  });
});
