// @test-pass sqlite
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ErrorCode,
  Flag,
  FrameDecoder,
  FrameType,
  MAX_PAYLOAD,
  encodeData,
  encodeGoAway,
  encodeHeader,
  encodeRst,
  encodeWndInc,
  parseFrames,
  readHeader,
  FrameCollector,
  type Frame,
} from '../../../src/tunnels/muxado/index.js';
import { pattern } from './helpers.js';

describe('muxado frame header', () => {
  it('packs length (24 bits), type (high nibble), flags (low nibble) and stream id big-endian', () => {
    const h = encodeHeader(FrameType.Data, Flag.Syn | Flag.Fin, 0x01020304, 0xabcdef);
    assert.deepEqual([...h], [0xab, 0xcd, 0xef, 0x13, 0x01, 0x02, 0x03, 0x04]);
    assert.deepEqual(readHeader(h), { length: 0xabcdef, type: 1, flags: 3, streamId: 0x01020304 });
  });

  it('masks the reserved top bit of the stream id on input', () => {
    const h = Buffer.from([0, 0, 0, 0x10, 0x80, 0, 0, 5]);
    assert.equal(readHeader(h).streamId, 5);
  });

  it('round-trips any header', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 0x7fffffff }), fc.integer({ min: 0, max: MAX_PAYLOAD }), (type, flags, id, len) => {
        assert.deepEqual(readHeader(encodeHeader(type, flags, id, len)), { type, flags, streamId: id, length: len });
      }),
      { numRuns: 300 },
    );
  });

  it('refuses to send a frame type above 3 (RS agents hang on one)', () => {
    for (const t of [4, 5, 15]) assert.throws(() => encodeHeader(t, 0, 1, 0), RangeError);
  });

  it('refuses to send WNDINC 0 (kills a GO session) or beyond 31 bits', () => {
    assert.throws(() => encodeWndInc(3, 0), RangeError);
    assert.throws(() => encodeWndInc(3, 0x80000000), RangeError);
    assert.deepEqual([...encodeWndInc(3, 5)], [0, 0, 4, 0x20, 0, 0, 0, 3, 0, 0, 0, 5]);
  });

  it('GOAWAY length = 8 + debug; RST length 4', () => {
    const g = encodeGoAway(7, 0, 'no error');
    assert.deepEqual(readHeader(g), { type: FrameType.GoAway, flags: 0, streamId: 0, length: 16 });
    assert.equal(g.readUInt32BE(8), 7);
    assert.equal(g.readUInt32BE(12), 0);
    assert.equal(g.subarray(16).toString(), 'no error');
    const r = encodeRst(9, ErrorCode.StreamClosed);
    assert.deepEqual(readHeader(r), { type: FrameType.Rst, flags: 0, streamId: 9, length: 4 });
    assert.equal(r.readUInt32BE(8), 4);
  });
});

/** A sample stream covering every frame type, empty and large payloads and unknown flag bits. */
function sampleStream(): { bytes: Buffer; expected: Array<Omit<Frame, 'length'>> } {
  const big = pattern(70_000, 7);
  const frames: Array<Omit<Frame, 'length'>> = [
    { type: FrameType.Data, flags: Flag.Syn, streamId: 3, payload: Buffer.from([0, 0, 0, 0]) },
    { type: FrameType.Data, flags: 0, streamId: 3, payload: big },
    { type: FrameType.WndInc, flags: 0, streamId: 2, payload: Buffer.from([0, 0, 1, 0]) },
    { type: FrameType.Data, flags: 0x4 | 0x8, streamId: 5, payload: Buffer.from('x') }, // unknown flags
    { type: FrameType.Rst, flags: 0, streamId: 7, payload: Buffer.from([0, 0, 0, 6]) },
    { type: FrameType.Data, flags: Flag.Fin, streamId: 3, payload: Buffer.alloc(0) },
    { type: FrameType.GoAway, flags: 0, streamId: 0, payload: Buffer.concat([Buffer.from([0, 0, 0, 3, 0, 0, 0, 0]), Buffer.from('no error')]) },
  ];
  const bytes = Buffer.concat([
    encodeData(3, Flag.Syn, frames[0]!.payload),
    encodeData(3, 0, big),
    encodeWndInc(2, 256),
    encodeData(5, 0x4 | 0x8, Buffer.from('x')),
    encodeRst(7, 6),
    encodeData(3, Flag.Fin),
    encodeGoAway(3, 0, 'no error'),
  ]);
  return { bytes, expected: frames };
}

function decodeChunked(bytes: Buffer, cuts: number[]): FrameCollector {
  const c = new FrameCollector();
  let prev = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    c.push(bytes.subarray(prev, cut));
    prev = cut;
  }
  c.push(bytes.subarray(prev));
  return c;
}

function strip(frames: Frame[]): Array<Omit<Frame, 'length'>> {
  return frames.map(({ type, flags, streamId, payload }) => ({ type, flags, streamId, payload }));
}

describe('muxado decoder', () => {
  it('decodes a stream delivered in one chunk', () => {
    const { bytes, expected } = sampleStream();
    const r = parseFrames(bytes);
    assert.equal(r.error, undefined);
    assert.deepEqual(strip(r.frames), expected);
  });

  it('decodes the same frames when the byte stream is split at every offset', () => {
    const { bytes, expected } = sampleStream();
    // the 70 kB payload makes all offsets slow to compare deeply; split the rest at every offset
    for (let cut = 0; cut <= bytes.length; cut += cut < 64 || cut > bytes.length - 64 ? 1 : 997) {
      const c = decodeChunked(bytes, [cut]);
      assert.deepEqual(strip(c.frames), expected, `split at ${cut}`);
    }
  });

  it('decodes the same frames one byte at a time', () => {
    const small = Buffer.concat([encodeData(3, Flag.Syn, Buffer.from('abcd')), encodeWndInc(3, 9), encodeRst(3, 4), encodeGoAway(3, 1, 'bye')]);
    const c = new FrameCollector();
    for (const b of small) c.push(Buffer.from([b]));
    assert.deepEqual(strip(c.frames), strip(parseFrames(small).frames));
    assert.equal(c.frames.length, 4);
  });

  it('decodes the same frames under random chunking (fast-check)', () => {
    const { bytes, expected } = sampleStream();
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 40 }), (cuts) => {
        assert.deepEqual(strip(decodeChunked(bytes, cuts).frames), expected);
      }),
      { numRuns: 150 },
    );
  });

  it('streams DATA payloads as subarrays of the input, without copying', () => {
    const payload = pattern(1000);
    const wire = encodeData(3, 0, payload);
    const parts: Buffer[] = [];
    const d = new FrameDecoder({
      onDataStart() {},
      onDataChunk: (c) => parts.push(c),
      onDataEnd() {},
      onRst() {},
      onWndInc() {},
      onGoAway() {},
      onError() {},
    });
    d.push(wire.subarray(0, 500));
    d.push(wire.subarray(500));
    assert.equal(parts.length, 2);
    assert.equal(parts[0]!.buffer, wire.buffer);
    assert.deepEqual(Buffer.concat(parts), payload);
  });

  it('GOAWAY is terminal even when its length lies (RS counts only the debug text)', () => {
    // RS: header length = debug length (13), then 8 bytes of id/code, then the 13 debug bytes, then anything
    const debug = Buffer.from('invalid frame');
    const lying = Buffer.concat([Buffer.from([0, 0, debug.length, 0x30, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1]), debug]);
    const after = encodeData(2, Flag.Syn, Buffer.from('must not be parsed'));
    for (const cut of [1, 8, 12, 16, 20, lying.length]) {
      const c = decodeChunked(Buffer.concat([lying, after, Buffer.from([0xff, 0xff, 0xff, 0xff])]), [cut]);
      assert.equal(c.error, undefined);
      assert.equal(c.frames.length, 1);
      const g = c.frames[0]!;
      assert.equal(g.type, FrameType.GoAway);
      assert.equal(g.payload.readUInt32BE(0), 5);
      assert.equal(g.payload.readUInt32BE(4), ErrorCode.Protocol);
      assert.ok(c.stopped);
    }
    // length 0 (empty debug, RS): still reads id and code
    const empty = parseFrames(Buffer.from([0, 0, 0, 0x30, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 1, 2, 3]));
    assert.equal(empty.frames.length, 1);
    assert.equal(empty.frames[0]!.payload.readUInt32BE(0), 9);
  });

  it('reports a frame type above 3 as a protocol error, or skips it when asked', () => {
    const unknown = Buffer.from([0, 0, 3, 0x40, 0, 0, 0, 3, 1, 2, 3]);
    const r = parseFrames(Buffer.concat([unknown, encodeWndInc(3, 1)]));
    assert.equal(r.error?.code, ErrorCode.Protocol);
    assert.equal(r.frames.length, 0);
    const skipped = parseFrames(Buffer.concat([unknown, encodeWndInc(3, 1)]), { ignoreUnknownTypes: true });
    assert.equal(skipped.error, undefined);
    assert.equal(skipped.frames.length, 1);
  });

  it('rejects malformed control frames and oversized DATA', () => {
    assert.equal(parseFrames(Buffer.from([0, 0, 5, 0x00, 0, 0, 0, 3, 0, 0, 0, 0, 0])).error?.code, ErrorCode.FrameSize); // RST length 5
    assert.equal(parseFrames(Buffer.from([0, 0, 4, 0x20, 0, 0, 0, 0, 0, 0, 0, 1])).error?.code, ErrorCode.Protocol); // WNDINC on stream 0
    assert.equal(parseFrames(Buffer.from([0, 0, 0, 0x10, 0, 0, 0, 0])).error?.code, ErrorCode.Protocol); // DATA on stream 0
    assert.equal(parseFrames(encodeData(3, 0, Buffer.alloc(100)), { maxFrameSize: 99 }).error?.code, ErrorCode.FrameSize);
  });

  it('never throws on arbitrary bytes (fast-check)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 5 }), (bytes, cuts) => {
        decodeChunked(Buffer.from(bytes), cuts.map((c) => Math.min(c, bytes.length)));
      }),
      { numRuns: 500 },
    );
  });
});
