// @test-pass sqlite
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MUXADO_DEFAULTS, muxadoConfig } from '../../../src/tunnels/muxado/config.js';
import { DEFAULT_WINDOW, MAX_PAYLOAD } from '../../../src/tunnels/muxado/frame.js';

test('muxado config: the defaults fill what is not given, undefined included', () => {
  const config = muxadoConfig({ side: 'server', maxIncomingStreams: 3, windowSize: undefined });
  assert.deepEqual(config, { ...MUXADO_DEFAULTS, side: 'server', maxIncomingStreams: 3 });
  assert.equal(config.windowSize, DEFAULT_WINDOW);
  assert.equal(config.maxFrameSize, MAX_PAYLOAD);
  assert.ok(Object.isFrozen(config));
});

test('muxado config: values the session could not honour are refused by name', () => {
  const bad: Array<[Parameters<typeof muxadoConfig>[0], RegExp]> = [
    [{ side: 'server', windowSize: 0 }, /windowSize 0/],
    [{ side: 'server', windowSize: 2 ** 31 }, /windowSize/],
    [{ side: 'client', windowSize: 1.5 }, /windowSize/],
    [{ side: 'server', transportBuffer: -1 }, /transportBuffer/],
    [{ side: 'server', transportBuffer: 256 * 1024 + 1 }, /transportBuffer/],
    [{ side: 'server', maxIncomingStreams: 0 }, /maxIncomingStreams/],
    [{ side: 'server', maxFrameSize: MAX_PAYLOAD + 1 }, /maxFrameSize/],
    [{ side: 'server', maxSendFrameSize: 0 }, /maxSendFrameSize/],
    [{ side: 'server', maxSendFrameSize: Number.NaN }, /maxSendFrameSize/],
    [{ side: 'server', closeFlushTimeoutMs: -1 }, /closeFlushTimeoutMs/],
    [{ side: 'middle' as 'server' }, /side/],
  ];
  for (const [options, message] of bad) assert.throws(() => muxadoConfig(options), (error: unknown) => error instanceof RangeError && message.test(error.message), JSON.stringify(options));
  assert.equal(muxadoConfig({ side: 'client', windowSize: 2 ** 31 - 1, closeFlushTimeoutMs: 0 }).windowSize, 2 ** 31 - 1);
});
