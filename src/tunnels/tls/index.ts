// burrow's private CA, the certificates it issues, and the ClientHello reader of the TLS port.
export { CA_CERT_FILE, CA_KEY_FILE, CA_VALIDITY_DAYS, loadOrCreateCa, type CertificateAuthority } from './ca.js';
export { LEAF_VALIDITY_DAYS, certificateNames, issueCertificate, issuedBy, type IssueOptions, type IssuedCertificate } from './certificates.js';
export {
  CLIENT_HELLO_MAX_BYTES,
  CLIENT_HELLO_TIMEOUT_MS,
  parseClientHello,
  readClientHello,
  unrecognizedNameAlert,
  type ClientHelloErrorCode,
  type ClientHelloParse,
  type ReadClientHelloOptions,
  type ReadClientHelloResult,
} from './client-hello.js';
export { TlsConfigError } from './errors.js';
export {
  REISSUE_BEFORE_MS,
  agentTlsMaterial,
  edgeTlsMaterial,
  type AgentTlsOptions,
  type EdgeTlsOptions,
  type TlsMaterial,
} from './material.js';
export { canonicalIp, normalizeDnsName } from './names.js';
export { onDemandCertificates, type OnDemandCertificates, type OnDemandOptions } from './on-demand.js';
