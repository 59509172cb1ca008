// @test-pass sqlite
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { test } from 'node:test';
import pino from 'pino';
import { ConnectionSink } from '../../../src/tunnels/public/connections.js';

test('a connection’s policy lists are bounded: a long keep-alive connection through HTTP phases counts what its log line cannot hold', () => {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const socket = new Socket();
  const conn = new ConnectionSink(logger, undefined).open('http', socket);
  for (let request = 0; request < 10_000; request++) {
    conn.listPolicy(conn.policyActions, 'on_http_request:add-headers');
    conn.listPolicy(conn.policyLogs, { request });
  }
  assert.equal(conn.policyActions.length, 64);
  assert.equal(conn.policyLogs.length, 64);
  assert.equal(conn.policyEntriesDropped, 2 * (10_000 - 64));
  socket.destroy();
  return new Promise<void>((resolve) => setImmediate(() => {
    const line = lines.find((l) => l.event === 'public_connection');
    assert.ok(line, 'the connection’s log line');
    assert.equal((line.policy_actions as unknown[]).length, 64);
    assert.equal(line.policy_entries_dropped, 2 * (10_000 - 64));
    resolve();
  }));
});
