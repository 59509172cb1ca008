// Keeping the served certificates current (CERTIFICATES.md §2): the agent and edge pairs and
// EDGE_TLS_CERTS_DIR, read again every 12 hours, when their files change and on demand (SIGHUP),
// and described for /metrics.
import type { TunnelConfig } from '../../config.js';
import type { CertificateSource, CertificateSummary } from '../../domain/certificates/inventory.js';
import type { Logger } from '../../observability/logger.js';
import { CertificateDirectory, type DirectoryPair } from './cert-directory.js';
import { CertificateFileWatch } from './file-watch.js';
import { describeCertificate } from './inventory.js';
import type { TlsMaterial } from './material.js';
import { CertificateRenewal, type RenewableCertificate } from './renewal.js';

export interface ServedPair {
  /** As loaded at start. */
  readonly material: TlsMaterial;
  /** The same loader as at start. */
  load(): Promise<TlsMaterial>;
  apply(material: { cert: string; key: string }): void;
}

export interface CertificateUpkeep {
  /** Reads everything again now; a bad new pair keeps the old one, logged. */
  reload(): Promise<void>;
  /** The certificates served now, once each. */
  served(): CertificateSummary[];
  start(): void;
  stop(): void;
}

/** Loads EDGE_TLS_CERTS_DIR into `edgeCertificates` (a bad pair there stops the start) and watches what the operator gave. */
export async function certificateUpkeep(
  config: TunnelConfig,
  logger: Logger,
  agent: ServedPair,
  edge: (ServedPair & { certificates: { useDirectory(pairs: readonly DirectoryPair[]): void } }) | undefined,
): Promise<CertificateUpkeep> {
  const directory = edge && config.edgeTlsCertsDir ? new CertificateDirectory(config.edgeTlsCertsDir, logger, (pairs) => edge.certificates.useDirectory(pairs)) : undefined;
  await directory?.load();
  const slot = (name: string, pair: ServedPair): RenewableCertificate & { source: CertificateSource } => ({
    name,
    current: pair.material.cert,
    load: () => pair.load(),
    apply: (material) => pair.apply(material),
    source: pair.material.source === 'files' ? 'file' : 'private_ca',
  });
  const slots = [slot('agent', agent), ...(edge ? [slot('edge', edge)] : [])];
  const renewal = new CertificateRenewal(slots, logger, undefined, directory ? [directory] : []);
  // the operator's files are read again when they change; burrow's own leaves only need the 12-hour look
  const operatorFiles = [config.agentTlsCert, config.agentTlsKey, ...(edge ? [config.edgeTlsCert, config.edgeTlsKey] : [])];
  const watch = new CertificateFileWatch(
    { files: operatorFiles.filter((file): file is string => !!file), directories: directory ? [directory.directory] : [] },
    () => void renewal.check(),
  );
  return {
    reload: () => renewal.check(),
    served() {
      const summaries = [
        ...slots.map((each) => describeCertificate(each.current, each.source)),
        ...(directory?.served ?? []).map((pair) => describeCertificate(pair.cert, 'file')),
      ];
      // one per certificate, though the agent and edge ports may serve the same one
      return [...new Map(summaries.map((summary) => [summary.id, summary])).values()];
    },
    start() {
      renewal.start();
      watch.start();
    },
    stop() {
      renewal.stop();
      watch.stop();
    },
  };
}
