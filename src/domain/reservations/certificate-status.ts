// A reserved domain's certificate_management_status (CERTIFICATES.md §0, §1): what ACME did for
// its name, in the reference API's shape.
import type { AcmeCertificateRow } from '../acme/types.js';
import { formatTimestamp } from '../ids.js';
import type { CertificatePolicy } from './types.js';

/** The reference API's certificate status: the renewal time and the provisioning job, if any. */
export interface CertificateStatus {
  readonly renewsAt: string | null;
  readonly provisioningJob: { readonly errorCode: string | null; readonly msg: string; readonly startedAt: string; readonly retriesAt: string | null } | null;
}

/** The ACME rows of some names (storage/repositories/acme.ts). */
export interface CertificateStates {
  certificatesNamed(names: readonly string[]): Promise<AcmeCertificateRow[]>;
}

const timestamp = (ms: number) => formatTimestamp(Math.floor(ms / 1000));

/**
 * With no ACME CA configured, the provisioning job says so, as the reference's status reports a
 * permanent condition for the user to correct (decision in DECISIONS.md). With one: the renewal
 * time once a certificate is in, the job while one is being ordered or after a failure.
 */
export function certificateStatus(domain: string, policy: CertificatePolicy | null, acme: { configured: boolean; dnsHook: boolean }, row: AcmeCertificateRow | undefined): CertificateStatus | null {
  if (policy === null) return null;
  const job = (errorCode: string | null, msg: string, retriesAt: number | null) => ({ errorCode, msg, startedAt: policy.setAt, retriesAt: retriesAt === null ? null : timestamp(retriesAt) });
  if (!acme.configured) {
    return {
      renewsAt: null,
      provisioningJob: job('ACME_NOT_CONFIGURED', 'ACME is not configured on this burrow server (ACME_DIRECTORY_URL is unset): no certificate is ordered, and the edge certificate is served for this name.', null),
    };
  }
  if (domain.startsWith('*.') && !acme.dnsHook) {
    return {
      renewsAt: null,
      provisioningJob: job('ACME_DNS_HOOK_MISSING', 'A wildcard certificate needs the dns-01 challenge, and this burrow server has no ACME_DNS_HOOK: no wildcard certificate is ordered; the names under it get their own when served.', null),
    };
  }
  const failed = row !== undefined && row.failures > 0 ? job('ACME_ORDER_FAILED', `The last order failed (${row.failures} in a row): ${row.lastError ?? 'unknown error'}`, row.orderAt) : null;
  if (row?.certPem != null) return { renewsAt: timestamp(row.orderAt), provisioningJob: failed };
  return { renewsAt: null, provisioningJob: failed ?? job(null, 'A certificate is being ordered.', null) };
}
