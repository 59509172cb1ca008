// Leaf certificates issued by burrow's CA.
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import type { CertificateAuthority } from './ca.js';
import { randomSerial } from './ca.js';
import { generateP256, importSigningKey, type SigningKey } from './keys.js';
import { canonicalIp, normalizeNames, type SubjectNames } from './names.js';
import { x509 } from './x509.js';

/** 397 days: the longest validity browsers accept for a server certificate. */
export const LEAF_VALIDITY_DAYS = 397;

const DAY_MS = 86_400_000;

export interface IssueOptions {
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  /** Validity in days (default 397), cut to the CA's own expiry. */
  days?: number;
  /** Also a client certificate (EKU clientAuth): the inter-instance link authenticates both ends. */
  clientAuth?: boolean;
}

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
  notAfter: Date;
}

interface CaSigner {
  signer: SigningKey;
  subject: x509.Name;
  authorityKeyId: x509.AuthorityKeyIdentifierExtension;
  notAfter: number;
}

const signers = new WeakMap<CertificateAuthority, Promise<CaSigner>>();

async function makeSigner(ca: CertificateAuthority): Promise<CaSigner> {
  const cert = new x509.X509Certificate(ca.certPem);
  const ski = cert.getExtension(x509.SubjectKeyIdentifierExtension);
  const authorityKeyId = ski
    ? new x509.AuthorityKeyIdentifierExtension(ski.keyId)
    : await x509.AuthorityKeyIdentifierExtension.create(createPublicKey(ca.certPem).export({ type: 'spki', format: 'der' }));
  return {
    signer: await importSigningKey(createPrivateKey(ca.keyPem)),
    subject: cert.subjectName,
    authorityKeyId,
    notAfter: cert.notAfter.getTime(),
  };
}

function caSigner(ca: CertificateAuthority): Promise<CaSigner> {
  let signer = signers.get(ca);
  if (!signer) {
    signer = makeSigner(ca);
    signers.set(ca, signer);
    signer.catch(() => signers.delete(ca));
  }
  return signer;
}

/**
 * Issues a server certificate signed by `ca`: ECDSA P-256, CA:FALSE, digitalSignature,
 * serverAuth, the given names as subjectAltName (the subject CN is the first name that fits),
 * AKI/SKI, a random serial, valid from a minute ago.
 */
export async function issueCertificate(ca: CertificateAuthority, options: IssueOptions): Promise<IssuedCertificate> {
  const names = normalizeNames(options);
  const all = [...(options.dnsNames ?? []).map((n) => n.toLowerCase()), ...(options.ipAddresses ?? []).map((ip) => canonicalIp(ip)!)];
  if (all.length === 0) throw new TypeError('a certificate needs at least one DNS name or IP address');
  const days = options.days ?? LEAF_VALIDITY_DAYS;
  if (!(days > 0)) throw new RangeError(`days must be positive, not ${days}`);

  const { signer, subject, authorityKeyId, notAfter: caNotAfter } = await caSigner(ca);
  const leaf = await generateP256();
  const now = Date.now();
  const notAfter = new Date(Math.min(now + days * DAY_MS, caNotAfter));
  const commonName = all.find((n) => n.length <= 64);
  const generalNames = [
    ...names.dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...names.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: commonName === undefined ? [] : [{ CN: [commonName] }],
    issuer: subject,
    notBefore: new Date(now - 60_000),
    notAfter,
    publicKey: leaf.keys.publicKey,
    signingKey: signer.key,
    signingAlgorithm: signer.signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension(options.clientAuth ? [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth] : [x509.ExtendedKeyUsage.serverAuth]),
      // With an empty subject the SAN must be critical (RFC 5280 §4.2.1.6).
      new x509.SubjectAlternativeNameExtension(generalNames, commonName === undefined),
      authorityKeyId,
      await x509.SubjectKeyIdentifierExtension.create(leaf.keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: leaf.keyPem, notAfter };
}

/** The DNS and IP subjectAltName entries of a certificate, normalized like normalizeNames. */
export function certificateNames(certPem: string): SubjectNames {
  const cert = new x509.X509Certificate(certPem);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  for (const name of san?.names.items ?? []) {
    if (name.type === 'dns') dnsNames.push(name.value);
    else if (name.type === 'ip') ipAddresses.push(name.value);
  }
  return normalizeNames({ dnsNames, ipAddresses });
}

/** True when `certPem` (first certificate) was signed by `ca`'s certificate. */
export function issuedBy(certPem: string, ca: CertificateAuthority): boolean {
  const cert = new X509Certificate(certPem);
  const caCert = new X509Certificate(ca.certPem);
  return cert.checkIssued(caCert) && cert.verify(caCert.publicKey);
}
