// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/observability/logger.js';

describe('the logger', () => {
  it('censors secret-named fields, at the top and inside headers, request and body objects', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    logger.info({ authorization: 'Bearer abc', token: 't0k', headers: { authorization: 'Bearer def', host: 'x' }, req: { headers: { authorization: 'Bearer ghi' } }, body: { secret: 's3', description: 'kept' } }, 'x');
    logger.error({ err: new Error('boom') }, 'failed');
    const text = lines.join('');
    for (const secret of ['abc', 't0k', 'def', 'ghi', 's3']) assert.ok(!text.includes(secret), secret);
    const first = JSON.parse(lines[0]!) as Record<string, any>;
    assert.equal(first.headers.host, 'x');
    assert.equal(first.body.description, 'kept');
    assert.equal(first.token, '[redacted]');
    assert.match(lines[1]!, /boom/);
  });
});

describe('the request line', () => {
  it('is JSON of the shape pino writes, and obeys the level', async () => {
    const { requestLineWriter } = await import('../../src/observability/logger.js');
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    const write = requestLineWriter(logger);
    write({ operationId: 'op_1', method: 'GET', route: '/credentials/:id', status: 404, errorCode: undefined, durationMs: 1.5, principalId: 'usr_1' });
    write({ operationId: 'op_2', method: 'GET', route: undefined, status: 401, errorCode: 'ERR_NGROK_203', durationMs: 0.25, principalId: undefined });
    const [first, second] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(Object.keys(first!), ['level', 'time', 'operation_id', 'method', 'route', 'status', 'duration_ms', 'principal_id', 'msg']);
    assert.equal(first!.level, 30);
    assert.ok(!Number.isNaN(Date.parse(first!.time as string)));
    assert.equal(second!.error_code, 'ERR_NGROK_203');
    assert.ok(!('route' in second!) && !('principal_id' in second!));
    logger.level = 'warn';
    write({ operationId: 'op_3', method: 'GET', route: undefined, status: 200, errorCode: undefined, durationMs: 1, principalId: undefined });
    assert.equal(lines.length, 2);
  });
});

describe('the turn-batched destination', () => {
  it('writes the lines of one event-loop turn together, in order, and flushes on demand', async () => {
    const { TurnBatchedDestination } = await import('../../src/observability/log-destination.js');
    const writes: string[] = [];
    const destination = new TurnBatchedDestination({ write: (text: string) => void writes.push(text) });
    const logger = createLogger('info', destination);
    const write = (await import('../../src/observability/logger.js')).requestLineWriter(logger);
    logger.info('first');
    write({ operationId: 'op_1', method: 'GET', route: undefined, status: 200, errorCode: undefined, durationMs: 1, principalId: undefined });
    logger.warn('third');
    assert.equal(writes.length, 0, 'nothing is written before the turn ends');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(writes.length, 1, 'one write for the whole turn');
    assert.deepEqual(
      writes[0]!.trimEnd().split('\n').map((line) => (JSON.parse(line) as { msg: string }).msg),
      ['first', 'request completed', 'third'],
    );

    logger.info('fourth');
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    assert.equal(writes.length, 2, 'flush writes at once and then calls back');
    assert.match(writes[1]!, /"fourth"/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(writes.length, 2, 'nothing is written twice');
  });
});
