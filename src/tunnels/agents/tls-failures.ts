import type { Logger } from '../../observability/logger.js';

/** One `agent_tls_failed` line per window at most: an agent with the wrong CA retries for ever. */
export const TLS_FAILURE_LOG_WINDOW_MS = 60_000;
const MAX_MESSAGE = 200;

/**
 * Failed TLS handshakes on the agent port (an agent that does not trust our certificate, a
 * client that is not TLS, a handshake that timed out): every one counted, and at most one log
 * line per window, with the client's address, the reason and how many failures the previous
 * line left unsaid. A handshake carries no secret of ours; the line holds only OpenSSL's text.
 */
export class TlsFailureLog {
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private unlogged = 0;

  constructor(
    private readonly logger: Logger,
    private readonly count: (reason: string) => void,
    private readonly windowMs = TLS_FAILURE_LOG_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  record(error: Error & { code?: string }, clientAddr: string): void {
    const reason = reasonOf(error);
    this.count(reason);
    const at = this.now();
    if (at - this.lastLineAt < this.windowMs) {
      this.unlogged++;
      return;
    }
    this.logger.warn(
      { event: 'agent_tls_failed', client_addr: clientAddr, reason, message: error.message.slice(0, MAX_MESSAGE), unlogged_before: this.unlogged },
      'agent TLS handshake failed (an agent that does not trust the agent port’s CA, or not an agent)',
    );
    this.lastLineAt = at;
    this.unlogged = 0;
  }
}

/**
 * A short, bounded name for the failure (a metric label): OpenSSL's code without its prefix
 * (`tlsv1_alert_unknown_ca`, `tlsv1_alert_bad_certificate`, `wrong_version_number`…), Node's
 * (`tls_handshake_timeout`), or the socket's (`econnreset`).
 */
export function reasonOf(error: { code?: string }): string {
  const code = typeof error.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(error.code) ? error.code : 'UNKNOWN';
  return code.replace(/^ERR_SSL_/, '').replace(/^ERR_/, '').toLowerCase();
}
