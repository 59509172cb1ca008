// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../../src/domain/errors.js';
import { InspectionRecorder, REDACTED } from '../../../src/domain/inspection/recorder.js';
import { replayOf } from '../../../src/domain/inspection/replay.js';
import { ReplayTokens } from '../../../src/domain/inspection/replay-tokens.js';
import type { InspectedRequest, InspectionRepository } from '../../../src/domain/inspection/types.js';

const captured: InspectedRequest = {
  id: 'req_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns',
  accountId: 'acct_1',
  endpointId: 'ep_1',
  createdAt: '2026-11-28T00:00:00Z',
  method: 'POST',
  path: '/orders?x=1',
  status: 201,
  durationMs: 3,
  clientIp: '192.0.2.1',
  requestHeaders: { host: ['a.example'], 'content-length': ['5'], authorization: [REDACTED], 'x-one': ['1', '2'], connection: ['close'] },
  responseHeaders: {},
  actions: [],
  requestBody: { data: Buffer.from('hello').toString('base64'), length: 5, truncated: false },
};

function fieldError(run: () => unknown, param: string): void {
  assert.throws(run, (error: unknown) => error instanceof ApiError && error.errorCode === 'ERR_NGROK_215' && error.details.param === param);
}

describe('replayOf', () => {
  test('the captured request: redacted, framing and Host headers left out, the body captured whole sent', () => {
    const request = replayOf(captured, {}, 'https://a.example');
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/orders?x=1');
    assert.deepEqual(request.headers, [['x-one', '1'], ['x-one', '2']]);
    assert.equal(request.body.toString(), 'hello');
  });

  test('edits replace method, path, every header and the body', () => {
    const request = replayOf(captured, { method: 'PUT', path: '/other', headers: { authorization: ['Bearer given'] }, body: 'new' }, 'https://a.example');
    assert.deepEqual([request.method, request.path, request.headers, request.body.toString()], ['PUT', '/other', [['authorization', 'Bearer given']], 'new']);
  });

  test('a body not captured whole, or not at all, is needed; a bodiless request needs none', () => {
    fieldError(() => replayOf({ ...captured, requestBody: { ...captured.requestBody!, length: 9000, truncated: true } }, {}, 'http://a'), 'body');
    fieldError(() => replayOf({ ...captured, requestBody: undefined }, {}, 'http://a'), 'body');
    assert.equal(replayOf({ ...captured, requestBody: undefined }, { body: 'given' }, 'http://a').body.toString(), 'given');
    const get = { ...captured, method: 'GET', requestHeaders: {}, requestBody: undefined };
    assert.equal(replayOf(get, {}, 'http://a').body.length, 0);
  });

  test('bad edits name their field', () => {
    fieldError(() => replayOf(captured, { method: 'GE T' }, 'http://a'), 'method');
    fieldError(() => replayOf(captured, { path: 'relative' }, 'http://a'), 'path');
    fieldError(() => replayOf(captured, { path: '/a b' }, 'http://a'), 'path');
    fieldError(() => replayOf(captured, { headers: { 'bad name': ['x'] } }, 'http://a'), 'headers');
    fieldError(() => replayOf(captured, { headers: { x: ['a\r\nb'] } }, 'http://a'), 'headers');
  });
});

describe('replay tokens', () => {
  const repository = {} as InspectionRepository;

  test('claimed once, for its endpoint only, before it expires', () => {
    let now = 1_000_000;
    const recorder = new InspectionRecorder(repository, 10, () => {}, () => now);
    const { token, id } = recorder.expectReplay('ep_1');
    assert.equal(recorder.claimReplay(token, 'ep_2'), undefined, 'another endpoint cannot claim it');
    assert.equal(recorder.claimReplay('guessed', 'ep_1'), undefined);
    assert.equal(recorder.claimReplay(token, 'ep_1'), id);
    assert.equal(recorder.claimReplay(token, 'ep_1'), undefined, 'once');
    const late = recorder.expectReplay('ep_1');
    now += 60_000;
    assert.equal(recorder.claimReplay(late.token, 'ep_1'), undefined, 'expired');
  });

  test('at most 100 wait; the oldest goes first', () => {
    const recorder = new InspectionRecorder(repository, 10);
    const first = recorder.expectReplay('ep_1');
    for (let i = 0; i < 100; i++) recorder.expectReplay('ep_1');
    assert.equal(recorder.replayPending(first.token), false);
  });

  test('a token made by one instance is claimed by another holding the same CLUSTER_SECRET, once, and by no other', () => {
    const secret = Buffer.alloc(32, 7);
    const now = 1_000_000;
    const sender = new InspectionRecorder(repository, 10, () => {}, () => now, new ReplayTokens(secret));
    const carrier = new InspectionRecorder(repository, 10, () => {}, () => now, new ReplayTokens(secret));
    const stranger = new InspectionRecorder(repository, 10, () => {}, () => now, new ReplayTokens(Buffer.alloc(32, 8)));
    const { token, id } = sender.expectReplay('ep_1');
    assert.equal(stranger.claimReplay(token, 'ep_1'), undefined, 'another key');
    assert.equal(carrier.claimReplay(token, 'ep_2'), undefined, 'another endpoint');
    const [tokenId, expires, mac] = token.split('.');
    assert.equal(tokenId, id);
    const other = 'req_2bN3ZkBJ7ynFfWtCnSHq7pxZ4Ns';
    assert.equal(carrier.claimReplay(`${other}.${expires}.${mac}`, 'ep_1'), undefined, 'an id of the sender’s choosing');
    assert.equal(carrier.claimReplay(`${id}.${(now + 3600_000).toString(36)}.${mac}`, 'ep_1'), undefined, 'a later expiry');
    assert.equal(carrier.claimReplay(token, 'ep_1'), id);
    assert.equal(carrier.claimReplay(token, 'ep_1'), undefined, 'once');
    // The sender's proxy never saw it: still pending there (the sender then looks for the row).
    assert.equal(sender.replayPending(token), true);
  });
});

