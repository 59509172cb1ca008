// The certificate and key of the agent listener and of the HTTPS endpoints: the operator's files
// (AGENT_TLS_CERT/AGENT_TLS_KEY, EDGE_TLS_CERT/EDGE_TLS_KEY), or a leaf issued from burrow's CA and
// kept in TLS_DIR (agent.pem/agent-key.pem, edge.pem/edge-key.pem) until it nears expiry or its
// names change.
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { loadOrCreateCa, type CertificateAuthority } from './ca.js';
import { certificateNames, issueCertificate, issuedBy } from './certificates.js';
import { TlsConfigError } from './errors.js';
import { PRIVATE_MODE, PUBLIC_MODE, readConfigured, readIfExists, replaceAtomically } from './files.js';
import { normalizeDnsName, normalizeNames, sameNames, type SubjectNames } from './names.js';

/** An issued leaf is reused while it has more than this left to live. */
export const REISSUE_BEFORE_MS = 30 * 86_400_000;

export interface TlsMaterial {
  /** PEM certificate (chain, when the operator's file has one). */
  cert: string;
  /** PEM private key. */
  key: string;
  /** ca.pem of burrow's CA when it issued `cert`; undefined with the operator's files. */
  caPath: string | undefined;
  /** True when this call created the CA (first start). */
  createdCa: boolean;
  source: 'files' | 'ca';
  /** With source 'ca': true when a new leaf was issued (none stored, names changed, near expiry). */
  issued: boolean;
  /** With source 'ca': the CA, for issuing more certificates (on-demand HTTPS names). */
  ca: CertificateAuthority | undefined;
  /** Things worth a log line (an operator's certificate without SAN, expired, …). */
  warnings: string[];
  /** The certificate's notAfter, ms since the epoch: a reloaded file already expired is refused. */
  notAfter: number;
}

export interface AgentTlsOptions {
  tlsDir: string;
  /** AGENT_TLS_CERT */
  certFile?: string | undefined;
  /** AGENT_TLS_KEY */
  keyFile?: string | undefined;
  /** AGENT_HOSTNAME: a DNS name or an IP address added to localhost, 127.0.0.1 and ::1. */
  extraHostname?: string | undefined;
}

export interface EdgeTlsOptions {
  tlsDir: string;
  /** EDGE_TLS_CERT */
  certFile?: string | undefined;
  /** EDGE_TLS_KEY */
  keyFile?: string | undefined;
  /** EDGE_DOMAIN: the leaf names it and *.EDGE_DOMAIN. */
  edgeDomain: string;
}

export async function agentTlsMaterial(options: AgentTlsOptions): Promise<TlsMaterial> {
  const dnsNames = ['localhost'];
  const ipAddresses = ['127.0.0.1', '::1'];
  const extra = options.extraHostname?.trim();
  if (extra) {
    if (isIP(extra)) ipAddresses.push(extra);
    else if (normalizeDnsName(extra, { wildcard: false }) !== undefined) dnsNames.push(extra);
    else throw new TlsConfigError(`AGENT_HOSTNAME: ${JSON.stringify(extra)} is neither a DNS name nor an IP address`);
  }
  return tlsMaterial({
    ...options,
    certVar: 'AGENT_TLS_CERT',
    keyVar: 'AGENT_TLS_KEY',
    stem: 'agent',
    names: normalizeNames({ dnsNames, ipAddresses }),
  });
}

export async function edgeTlsMaterial(options: EdgeTlsOptions): Promise<TlsMaterial> {
  const domain = normalizeDnsName(options.edgeDomain.trim(), { wildcard: false });
  if (domain === undefined) throw new TlsConfigError(`EDGE_DOMAIN: ${JSON.stringify(options.edgeDomain)} is not a DNS name`);
  return tlsMaterial({
    ...options,
    certVar: 'EDGE_TLS_CERT',
    keyVar: 'EDGE_TLS_KEY',
    stem: 'edge',
    names: normalizeNames({ dnsNames: [domain, `*.${domain}`] }),
    coverHost: `probe.${domain}`,
  });
}

interface MaterialRequest {
  tlsDir: string;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  certVar: string;
  keyVar: string;
  stem: string;
  names: SubjectNames;
  /** With operator files: warn when the certificate does not cover this name. */
  coverHost?: string;
}

async function tlsMaterial(req: MaterialRequest): Promise<TlsMaterial> {
  const certFile = req.certFile || undefined;
  const keyFile = req.keyFile || undefined;
  if (certFile !== undefined || keyFile !== undefined) {
    if (certFile === undefined) throw new TlsConfigError(`${req.keyVar} is set but ${req.certVar} is not: give both, or neither to use burrow's CA`);
    if (keyFile === undefined) throw new TlsConfigError(`${req.certVar} is set but ${req.keyVar} is not: give both, or neither to use burrow's CA`);
    return operatorFiles(req, certFile, keyFile);
  }

  const ca = await loadOrCreateCa(req.tlsDir);
  const certPath = join(ca.caPath, '..', `${req.stem}.pem`);
  const keyPath = join(ca.caPath, '..', `${req.stem}-key.pem`);
  const stored = await reusableLeaf(ca, certPath, keyPath, req.names);
  if (stored) {
    return { cert: stored.cert, key: stored.key, caPath: ca.caPath, createdCa: ca.created, source: 'ca', issued: false, ca, warnings: [], notAfter: stored.notAfter };
  }
  const leaf = await issueCertificate(ca, req.names);
  try {
    // Key first: a reader that sees the new certificate always finds its key. Two processes
    // reissuing at once may leave a mismatched pair on disk; the next start reissues it.
    await replaceAtomically(keyPath, leaf.keyPem, PRIVATE_MODE);
    await replaceAtomically(certPath, leaf.certPem, PUBLIC_MODE);
  } catch (err) {
    throw new TlsConfigError(`cannot write ${certPath}: ${(err as Error).message}`, { cause: err });
  }
  return { cert: leaf.certPem, key: leaf.keyPem, caPath: ca.caPath, createdCa: ca.created, source: 'ca', issued: true, ca, warnings: [], notAfter: leaf.notAfter.getTime() };
}

/** The stored leaf when it is intact, ours, names exactly `names` and lives > 30 more days. */
async function reusableLeaf(
  ca: CertificateAuthority,
  certPath: string,
  keyPath: string,
  names: SubjectNames,
): Promise<{ cert: string; key: string; notAfter: number } | undefined> {
  try {
    const [cert, key] = await Promise.all([readIfExists(certPath), readIfExists(keyPath)]);
    if (cert === undefined || key === undefined) return undefined;
    const x = new X509Certificate(cert);
    const now = Date.now();
    if (Date.parse(x.validFrom) > now + 300_000) return undefined;
    if (Date.parse(x.validTo) - now <= REISSUE_BEFORE_MS) return undefined;
    if (!x.checkPrivateKey(createPrivateKey(key))) return undefined;
    if (!issuedBy(cert, ca)) return undefined;
    if (!sameNames(certificateNames(cert), names)) return undefined;
    return { cert, key, notAfter: Date.parse(x.validTo) };
  } catch {
    return undefined; // unreadable or corrupt: ours to replace
  }
}

async function operatorFiles(req: MaterialRequest, certFile: string, keyFile: string): Promise<TlsMaterial> {
  const certPem = await readConfigured(req.certVar, certFile);
  const keyPem = await readConfigured(req.keyVar, keyFile);
  const cert = checkOperatorPair(certPem, keyPem, { certVar: req.certVar, keyVar: req.keyVar, certFile, keyFile });
  const warnings: string[] = [];
  const now = Date.now();
  if (Date.parse(cert.validTo) <= now) warnings.push(`${req.certVar}: ${certFile} expired on ${cert.validTo}`);
  if (Date.parse(cert.validFrom) > now) warnings.push(`${req.certVar}: ${certFile} is not valid before ${cert.validFrom}`);
  if (cert.subjectAltName === undefined) warnings.push(`${req.certVar}: ${certFile} has no subjectAltName; the ngrok agents and browsers refuse such a certificate`);
  if (req.coverHost !== undefined && cert.checkHost(req.coverHost) === undefined) {
    const wildcard = req.coverHost.replace(/^[^.]+/, '*');
    warnings.push(`${req.certVar}: ${certFile} does not cover ${wildcard}; clients of HTTPS endpoints under it will refuse it`);
  }
  if (cert.ca) warnings.push(`${req.certVar}: ${certFile} is a CA certificate; the ngrok agents refuse a CA certificate as the server's`);
  return { cert: certPem, key: keyPem, caPath: undefined, createdCa: false, source: 'files', issued: false, ca: undefined, warnings, notAfter: Date.parse(cert.validTo) };
}

/** Where an operator's pair came from, for error messages: the variables and the files. */
export interface PairOrigin {
  certVar: string;
  keyVar: string;
  certFile: string;
  keyFile: string;
}

/**
 * An operator's certificate and key, checked: a PEM certificate, an unencrypted private key that
 * is the certificate's, and a pair TLS accepts. Throws a TlsConfigError naming the file.
 */
export function checkOperatorPair(certPem: string, keyPem: string, origin: PairOrigin): X509Certificate {
  const { certVar, keyVar, certFile, keyFile } = origin;
  let cert: X509Certificate;
  try {
    if (!certPem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM block');
    cert = new X509Certificate(certPem);
  } catch (err) {
    throw new TlsConfigError(`${certVar}: ${certFile} contains no PEM certificate`, { cause: err });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch (err) {
    const what = /ENCRYPTED/.test(keyPem) ? 'is an encrypted private key (burrow needs it unencrypted)' : 'contains no PEM private key';
    throw new TlsConfigError(`${keyVar}: ${keyFile} ${what}`, { cause: err });
  }
  if (key.type !== 'private') throw new TlsConfigError(`${keyVar}: ${keyFile} contains no PEM private key`);
  if (!cert.checkPrivateKey(key)) {
    throw new TlsConfigError(`${keyVar}: ${keyFile} does not match the certificate in ${certVar} (${certFile})`);
  }
  try {
    createSecureContext({ cert: certPem, key: keyPem });
  } catch (err) {
    throw new TlsConfigError(`${certVar}/${keyVar}: ${certFile} and ${keyFile} cannot be used for TLS: ${(err as Error).message}`, { cause: err });
  }
  return cert;
}
