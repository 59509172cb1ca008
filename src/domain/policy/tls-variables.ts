/**
 * `conn.tls.*` (the reference's "Connection TLS Variables") in the representation the activation
 * holds them: built once per connection by the data plane, which knows the handshake, and shared
 * by every evaluation on it. Before a handshake (on_tcp_connect) only `sni` is known; a connection
 * without TLS has them all empty.
 */

export interface DistinguishedName {
  common_name: string;
  country: string[];
  locality: string[];
  organization: string[];
  organizational_unit: string[];
  postal_code: string[];
  province: string[];
  street_address: string[];
}

export interface CertificateVariables {
  extensions: Array<{ id: string; critical: boolean; value: Uint8Array }>;
  issuer: DistinguishedName;
  subject: DistinguishedName;
  san: { dns_names: string[]; email_addresses: string[]; ip_addresses: string[]; uris: string[] };
  serial_number: string;
  signature_algorithm: string;
  validity: { not_after: Date; not_before: Date };
}

export interface TlsVariables {
  cipher_suite: string;
  ja4_fingerprint: string;
  negotiated_alpn: string;
  session_resumed: boolean;
  sni: string;
  /** `1.2`, `1.3`. */
  version: string;
  client: CertificateVariables & { pem: string };
  server: CertificateVariables;
}

export function emptyName(): DistinguishedName {
  return { common_name: '', country: [], locality: [], organization: [], organizational_unit: [], postal_code: [], province: [], street_address: [] };
}

export function emptyCertificate(): CertificateVariables {
  return {
    extensions: [],
    issuer: emptyName(),
    subject: emptyName(),
    san: { dns_names: [], email_addresses: [], ip_addresses: [], uris: [] },
    serial_number: '',
    signature_algorithm: '',
    validity: { not_after: new Date(0), not_before: new Date(0) },
  };
}

/** The variables with what is known filled in, the rest empty. */
export function tlsVariables(known: Partial<Omit<TlsVariables, 'client' | 'server'>> & { client?: TlsVariables['client'] | undefined; server?: CertificateVariables | undefined } = {}): TlsVariables {
  return {
    cipher_suite: known.cipher_suite ?? '',
    ja4_fingerprint: known.ja4_fingerprint ?? '',
    negotiated_alpn: known.negotiated_alpn ?? '',
    session_resumed: known.session_resumed ?? false,
    sni: known.sni ?? '',
    version: known.version ?? '',
    client: known.client ?? { ...emptyCertificate(), pem: '' },
    server: known.server ?? emptyCertificate(),
  };
}

/** A connection without TLS (shared: never written to). */
export const NO_TLS: TlsVariables = deepFreeze(tlsVariables());

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
