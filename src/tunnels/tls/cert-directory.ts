// EDGE_TLS_CERTS_DIR: more edge certificates, as `<stem>.crt` + `<stem>.key` pairs in one
// directory, chosen by SNI (edge-certificates.ts). Read at start and again with the other
// certificates; a pair that is bad on a reload keeps its previous version serving.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../observability/logger.js';
import { certificateNames } from './certificates.js';
import { TlsConfigError, describeFsError } from './errors.js';
import { checkOperatorPair } from './material.js';

export const CERTS_DIR_VAR = 'EDGE_TLS_CERTS_DIR';

export interface DirectoryPair {
  /** The file name without `.crt`/`.key`. */
  readonly stem: string;
  readonly cert: string;
  readonly key: string;
  /** DNS names of its subjectAltName (`*.example.com` for a wildcard). */
  readonly names: readonly string[];
  readonly notAfter: number;
}

export type DirectoryEntry = { stem: string; pair: DirectoryPair } | { stem: string; problem: string };

/** Every pair of `directory`, or why it cannot be used; other files are ignored. Throws when the directory cannot be read. */
export async function readCertificateDirectory(directory: string): Promise<DirectoryEntry[]> {
  let files: string[];
  try {
    files = await readdir(directory);
  } catch (err) {
    throw new TlsConfigError(`${CERTS_DIR_VAR}: cannot read ${directory}: ${describeFsError(err)}`, { cause: err });
  }
  const present = new Set(files);
  const stems = new Set(files.filter((file) => /\.(crt|key)$/.test(file) && !file.startsWith('.')).map((file) => file.slice(0, -4)));
  const entries: DirectoryEntry[] = [];
  for (const stem of [...stems].sort()) {
    const certFile = join(directory, `${stem}.crt`);
    const keyFile = join(directory, `${stem}.key`);
    if (!present.has(`${stem}.crt`) || !present.has(`${stem}.key`)) {
      entries.push({ stem, problem: `${CERTS_DIR_VAR}: ${present.has(`${stem}.crt`) ? certFile : keyFile} has no ${present.has(`${stem}.crt`) ? `${stem}.key` : `${stem}.crt`} beside it` });
      continue;
    }
    try {
      const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
      const x509 = checkOperatorPair(cert, key, { certVar: CERTS_DIR_VAR, keyVar: CERTS_DIR_VAR, certFile, keyFile });
      entries.push({ stem, pair: { stem, cert, key, names: certificateNames(cert).dnsNames, notAfter: Date.parse(x509.validTo) } });
    } catch (err) {
      entries.push({ stem, problem: err instanceof TlsConfigError ? err.message : `${CERTS_DIR_VAR}: cannot read ${certFile}: ${describeFsError(err)}` });
    }
  }
  return entries;
}

/** The pairs served from the directory, kept across reloads. */
export class CertificateDirectory {
  private pairs = new Map<string, DirectoryPair>();

  constructor(
    readonly directory: string,
    private readonly logger: Logger,
    /** Serves these pairs from now on. */
    private readonly apply: (pairs: readonly DirectoryPair[]) => void,
  ) {}

  get served(): readonly DirectoryPair[] {
    return [...this.pairs.values()];
  }

  /** At start: a pair that cannot be used is an error (the operator is there to fix it). */
  async load(): Promise<void> {
    const entries = await readCertificateDirectory(this.directory);
    for (const entry of entries) if ('problem' in entry) throw new TlsConfigError(entry.problem);
    this.pairs = new Map(entries.flatMap((entry) => ('pair' in entry ? [[entry.stem, entry.pair] as const] : [])));
    for (const pair of this.pairs.values()) if (pair.notAfter <= Date.now()) this.logger.warn({ stem: pair.stem }, `${CERTS_DIR_VAR}: ${pair.stem}.crt has expired`);
    this.apply(this.served);
  }

  /** Later: a bad or expired pair keeps its previous version (logged); a removed pair is no longer served. */
  async reload(): Promise<void> {
    let entries: DirectoryEntry[];
    try {
      entries = await readCertificateDirectory(this.directory);
    } catch (error) {
      this.logger.error({ err: error }, `${CERTS_DIR_VAR}: reload failed: the current certificates are still served`);
      return;
    }
    const next = new Map<string, DirectoryPair>();
    for (const entry of entries) {
      const previous = this.pairs.get(entry.stem);
      const problem = 'problem' in entry ? entry.problem : entry.pair.notAfter <= Date.now() ? `${CERTS_DIR_VAR}: ${entry.stem}.crt has expired` : undefined;
      if (problem !== undefined || !('pair' in entry)) {
        this.logger.error({ stem: entry.stem, problem }, `${CERTS_DIR_VAR}: a bad pair: ${previous ? 'its previous version is still served' : 'it is not served'}`);
        if (previous) next.set(entry.stem, previous);
        continue;
      }
      if (previous?.cert === entry.pair.cert && previous.key === entry.pair.key) {
        next.set(entry.stem, previous);
        continue;
      }
      this.logger.info({ stem: entry.stem }, `${CERTS_DIR_VAR}: certificate loaded: new connections get it`);
      next.set(entry.stem, entry.pair);
    }
    const same = next.size === this.pairs.size && [...next].every(([stem, pair]) => this.pairs.get(stem) === pair);
    if (same) return;
    this.pairs = next;
    this.apply(this.served);
  }
}
