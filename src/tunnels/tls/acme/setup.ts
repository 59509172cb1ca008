// ACME in the data plane: the certificates' manager built from the configuration, and the names
// it orders when they are bound (only names burrow serves: no issuance for an arbitrary SNI).
import type { AcmeChallengeType, TunnelConfig } from '../../../config.js';
import type { AcmeRepository } from '../../../domain/acme/types.js';
import type { Logger } from '../../../observability/logger.js';
import type { Metrics } from '../../../observability/metrics.js';
import { SchemeRoutes, type TunnelRegistry } from '../../registry.js';
import { TlsConfigError } from '../errors.js';
import { AcmeCertificates } from './acme-certificates.js';
import { loadOrCreateSealingSecret } from './sealing-secret.js';

export async function acmeCertificates(
  config: TunnelConfig,
  repository: AcmeRepository,
  registry: TunnelRegistry,
  owner: string,
  logger: Logger,
  metrics: Metrics | undefined,
  covered: (name: string) => boolean,
): Promise<AcmeCertificates | undefined> {
  if (!config.acme) return undefined;
  if (config.edgeTlsPort === 0) throw new TlsConfigError('ACME_DIRECTORY_URL is set but EDGE_TLS_PORT=0: ACME certificates are served on the TLS port');
  const open: Record<AcmeChallengeType, boolean> = { 'tls-alpn-01': config.edgeTlsPort > 0, 'http-01': config.edgeHttpPort > 0 };
  const challenges = config.acme.challenges.filter((type) => open[type]);
  if (challenges.length === 0) throw new TlsConfigError(`ACME_CHALLENGES=${config.acme.challenges.join(',')} needs EDGE_HTTP_PORT, which is 0`);
  const https = new SchemeRoutes(registry, 'https', config.edgePublicTlsPort);
  // a tls endpoint's name has a certificate only when a terminate-tls action ordered one at a handshake
  const tls = new SchemeRoutes(registry, 'tls', config.edgePublicTlsPort);
  return new AcmeCertificates({
    config: config.acme,
    repository,
    secret: await loadOrCreateSealingSecret(config.tlsDir),
    owner,
    challenges,
    serves: (name) => https.exact(name) !== undefined || tls.exact(name) !== undefined,
    covered,
    always: config.acme.dnsHook === undefined ? [] : [`*.${config.edgeDomain}`],
    logger,
    observeOrder: metrics ? (result) => metrics.observeAcmeOrder(result) : undefined,
  });
}

/** An https endpoint's own name is ordered when its first tunnel binds, unless the edge certificate covers it. */
export function orderOnBind(acme: AcmeCertificates, registry: TunnelRegistry, covered: (name: string) => boolean): void {
  registry.poolOpened = (url) => {
    if (!url.startsWith('https://')) return;
    const host = url.slice('https://'.length).replace(/:\d+$/, '');
    if (host.startsWith('*.') || covered(host)) return;
    void acme.want(host).catch(() => {});
  };
}
