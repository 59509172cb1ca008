// A server that runs longer than its certificate lives: the agent and edge certificates are
// looked at again twice a day, when their files change (file-watch.ts) and on SIGHUP, and a new
// one (a leaf reissued from burrow's CA within 30 days of its expiry, or the operator's files
// replaced on disk) is served to new connections at once. A bad new pair keeps the old one.
import type { Logger } from '../../observability/logger.js';
import { coalescing } from './coalescing.js';
import type { TlsMaterial } from './material.js';

export const RENEWAL_CHECK_MS = 12 * 3_600_000;

export interface RenewableCertificate {
  /** For log lines: `agent` or `edge`. */
  readonly name: string;
  /** The certificate (PEM) served now. */
  current: string;
  /** The material as it should be now (the same loader as at start: it reissues when due). */
  load(): Promise<Pick<TlsMaterial, 'cert' | 'key' | 'warnings'> & { notAfter?: number }>;
  /** Serves `cert`/`key` to connections from now on. */
  apply(material: { cert: string; key: string }): void;
}

/** Anything else reloaded with them (the directory of edge pairs): it logs its own failures. */
export interface Reloadable {
  reload(): Promise<void>;
}

export class CertificateRenewal {
  private timer: NodeJS.Timeout | undefined;
  private readonly checkCoalesced = coalescing(() => this.checkOnce());

  constructor(
    private readonly certificates: readonly RenewableCertificate[],
    private readonly logger: Logger,
    private readonly intervalMs = RENEWAL_CHECK_MS,
    private readonly others: readonly Reloadable[] = [],
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.check(), this.intervalMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One look at every certificate; a failure keeps the one served and is logged. Calls that come
   * while one runs share one more run after it (a burst of file events reads the files twice, not
   * once per event, and never concurrently).
   */
  check(): Promise<void> {
    return this.checkCoalesced();
  }

  private async checkOnce(): Promise<void> {
    for (const certificate of this.certificates) {
      try {
        const material = await certificate.load();
        if (material.cert === certificate.current) continue;
        if (material.notAfter !== undefined && material.notAfter <= Date.now()) {
          throw new Error(`the new certificate expired on ${new Date(material.notAfter).toISOString()}`);
        }
        certificate.apply(material);
        certificate.current = material.cert;
        this.logger.info({ certificate: certificate.name }, 'TLS certificate renewed: new connections get the new one');
        for (const warning of material.warnings) this.logger.warn({ warning }, `${certificate.name} TLS certificate`);
      } catch (error) {
        this.logger.error({ err: error, certificate: certificate.name }, 'TLS certificate renewal failed: the current one is still served');
      }
    }
    for (const other of this.others) await other.reload();
  }
}
