// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../../src/observability/logger.js';
import { TlsFailureLog, reasonOf } from '../../../src/tunnels/agents/tls-failures.js';

/** The rate limit of `agent_tls_failed` lines, with a clock of the test's own. */
describe('agent TLS failure log', () => {
  function setup() {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const counted: string[] = [];
    let now = 1_000_000;
    const log = new TlsFailureLog(logger, (reason) => counted.push(reason), 60_000, () => now);
    return { lines, counted, log, advance: (ms: number) => (now += ms) };
  }

  const unknownCa = Object.assign(new Error('error:0A000418:SSL routines::tlsv1 alert unknown ca'), { code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' });

  it('one line per window, each failure counted; the next line says how many went unlogged', () => {
    const { lines, counted, log, advance } = setup();
    for (let i = 0; i < 7; i++) {
      log.record(unknownCa, `10.0.0.${i}:4000`);
      advance(5_000);
    }
    assert.equal(counted.length, 7);
    assert.equal(lines.length, 1);
    assert.deepEqual(
      { event: lines[0]!.event, client_addr: lines[0]!.client_addr, reason: lines[0]!.reason, unlogged_before: lines[0]!.unlogged_before, level: lines[0]!.level },
      { event: 'agent_tls_failed', client_addr: '10.0.0.0:4000', reason: 'tlsv1_alert_unknown_ca', unlogged_before: 0, level: 40 },
    );
    advance(60_000);
    log.record(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), '10.0.0.9:4000');
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.unlogged_before, 6);
    assert.equal(lines[1]!.reason, 'econnreset');
    assert.equal(counted.length, 8);
  });

  it('reasons are short bounded names (a metric label)', () => {
    assert.equal(reasonOf({ code: 'ERR_SSL_WRONG_VERSION_NUMBER' }), 'wrong_version_number');
    assert.equal(reasonOf({ code: 'ERR_TLS_HANDSHAKE_TIMEOUT' }), 'tls_handshake_timeout');
    assert.equal(reasonOf({}), 'unknown');
    assert.equal(reasonOf({ code: 'not a code; "quoted"' }), 'unknown');
  });
});
