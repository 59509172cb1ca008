/** ACME state shared by every instance (CERTIFICATES.md §1): keys are sealed (domain/sealing.ts) before they get here. */

export interface AcmeAccountRow {
  readonly directoryUrl: string;
  readonly keySealed: string;
  readonly accountUrl: string | null;
}

/** The key of an ordered certificate: a reserved domain's `private_key_type`, else ECDSA. */
export type AcmeKeyType = 'rsa' | 'ecdsa';

export interface ManagedName {
  readonly name: string;
  /** Set for a reserved domain with a policy; a TLS edge hostport has none (ECDSA). */
  readonly keyType?: AcmeKeyType;
}

/** A name's certificate, or its order still pending (no certificate yet). */
export interface AcmeCertificateRow {
  readonly name: string;
  readonly certPem: string | null;
  readonly keySealed: string | null;
  /** Unix ms. */
  readonly notAfter: number | null;
  /** When to order again (renewal, or a retry after failures). Unix ms. */
  readonly orderAt: number;
  /** Orders failed in a row since the last success. */
  readonly failures: number;
  readonly lastError: string | null;
}

export interface AcmeRepository {
  account(directoryUrl: string): Promise<AcmeAccountRow | undefined>;
  /** Stores the account unless one exists for the directory already; returns the stored one. */
  saveAccount(account: AcmeAccountRow): Promise<AcmeAccountRow>;
  /**
   * The names burrow serves whatever is bound (CERTIFICATES.md §1): reserved domains with a
   * certificate management policy (wildcards too) and TLS edge hostports of live accounts.
   */
  managedNames(): Promise<ManagedName[]>;
  /** The key type the certificate management policy of the reserved domain `name` asks for, if it has one. */
  policyKeyType(name: string): Promise<AcmeKeyType | undefined>;
  certificate(name: string): Promise<AcmeCertificateRow | undefined>;
  certificatesNamed(names: readonly string[]): Promise<AcmeCertificateRow[]>;
  /** Every row, for the renewal sweep and to load what other instances obtained. */
  certificates(): Promise<AcmeCertificateRow[]>;
  /**
   * Takes the right to order `name` until `untilMs` unless another instance holds it; creates
   * the row when missing. False when someone else orders it now.
   */
  claimOrder(name: string, owner: string, nowMs: number, untilMs: number): Promise<boolean>;
  /** The order's outcome: the new certificate, or the failure and the next attempt; frees the claim. */
  finishOrder(name: string, owner: string, outcome: OrderOutcome): Promise<void>;
  putChallenge(key: string, keyAuthorization: string, expiresAt: number): Promise<void>;
  challenge(key: string, nowMs: number): Promise<string | undefined>;
  deleteChallenge(key: string): Promise<void>;
}

export type OrderOutcome =
  | { readonly ok: true; readonly certPem: string; readonly keySealed: string; readonly notAfter: number; readonly orderAt: number }
  | { readonly ok: false; readonly error: string; readonly failures: number; readonly orderAt: number };
