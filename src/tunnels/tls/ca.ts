// burrow's private certificate authority: TLS_DIR/ca.pem and TLS_DIR/ca-key.pem, created on the
// first start and reused afterwards.
import { X509Certificate, createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TlsConfigError, describeFsError } from './errors.js';
import { PRIVATE_MODE, PUBLIC_MODE, makeDirectories, publishExclusive, readIfExists } from './files.js';
import { generateP256, importSigningKey } from './keys.js';
import { x509 } from './x509.js';

export const CA_CERT_FILE = 'ca.pem';
export const CA_KEY_FILE = 'ca-key.pem';
export const CA_VALIDITY_DAYS = 3650;

const DAY_MS = 86_400_000;

export interface CertificateAuthority {
  /** The CA certificate, PEM: what agents are given as `caCert` / `root_cas`. */
  certPem: string;
  /** The CA private key, PEM. */
  keyPem: string;
  /** Absolute path of ca.pem. */
  caPath: string;
  /** Absolute path of ca-key.pem; undefined for the cluster CA, whose key is only in the database. */
  keyPath: string | undefined;
  /** True when this call created the CA (the first start): print where it is, once. */
  created: boolean;
}

/** A random positive serial number of 16 bytes, as the hex string @peculiar/x509 takes. */
export function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x40; // positive, and no leading zero byte to strip
  return bytes.toString('hex');
}

async function readCaFile(path: string): Promise<string | undefined> {
  try {
    return await readIfExists(path);
  } catch (err) {
    throw new TlsConfigError(`cannot read ${path}: ${describeFsError(err)}`, { cause: err });
  }
}

function parseCaKey(keyPath: string, keyPem: string): KeyObject {
  try {
    return createPrivateKey(keyPem);
  } catch (err) {
    const what = /ENCRYPTED/.test(keyPem) ? 'is an encrypted private key (burrow needs it unencrypted)' : 'is not a PEM private key';
    throw new TlsConfigError(`${keyPath} ${what}: remove ${keyPath} and ${CA_CERT_FILE} beside it to have burrow create a new CA`, { cause: err });
  }
}

function parseCaCert(caPath: string, certPem: string): X509Certificate {
  try {
    return new X509Certificate(certPem);
  } catch (err) {
    throw new TlsConfigError(`${caPath} is not a PEM certificate: remove it and ${CA_KEY_FILE} beside it to have burrow create a new CA`, { cause: err });
  }
}

/** A new CA: a P-256 key and its self-signed certificate, in memory. */
export async function createCaPair(): Promise<{ certPem: string; keyPem: string }> {
  const generated = await generateP256();
  return { certPem: await createCaCertificate(createPrivateKey(generated.keyPem)), keyPem: generated.keyPem };
}

/** A self-signed CA certificate for `key`. */
async function createCaCertificate(key: KeyObject): Promise<string> {
  const signer = await importSigningKey(key);
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const now = Date.now();
  const name = [{ CN: [`burrow local CA ${randomBytes(4).toString('hex')}`] }];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: name,
    issuer: name,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + CA_VALIDITY_DAYS * DAY_MS),
    publicKey: spki,
    signingKey: signer.key,
    signingAlgorithm: signer.signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(spki),
    ],
  });
  return cert.toString('pem') + '\n';
}

/**
 * Loads the CA from `dir`, creating it (and `dir`, mode 0700) when there is none. Existing files
 * are never overwritten: a file that cannot be read or parsed, or a certificate and key that do
 * not belong together, is an error naming the file.
 *
 * Two processes starting at once end up with the same CA: each file is published with an
 * exclusive hard link (the key first), and every caller returns what is on disk afterwards.
 * A key without its certificate (a start interrupted between the two) gets a new certificate.
 */
export async function loadOrCreateCa(dir: string): Promise<CertificateAuthority> {
  const root = resolve(dir);
  try {
    if (await makeDirectories(root, 0o700)) await chmod(root, 0o700);
  } catch (err) {
    throw new TlsConfigError(`cannot create TLS_DIR ${root}: ${describeFsError(err)}`, { cause: err });
  }
  const caPath = join(root, CA_CERT_FILE);
  const keyPath = join(root, CA_KEY_FILE);

  let created = false;
  let keyPem = await readCaFile(keyPath);
  let certPem = await readCaFile(caPath);
  if (keyPem === undefined && certPem !== undefined) {
    throw new TlsConfigError(`${caPath} exists but ${keyPath} does not: restore the key, or remove ${caPath} to have burrow create a new CA`);
  }
  try {
    if (keyPem === undefined) {
      const generated = await generateP256();
      if (await publishExclusive(keyPath, generated.keyPem, PRIVATE_MODE)) {
        created = true;
        await publishExclusive(caPath, await createCaCertificate(createPrivateKey(generated.keyPem)), PUBLIC_MODE);
      }
      keyPem = await readCaFile(keyPath);
      certPem = await readCaFile(caPath);
    }
    if (keyPem !== undefined && certPem === undefined) {
      await publishExclusive(caPath, await createCaCertificate(parseCaKey(keyPath, keyPem)), PUBLIC_MODE);
      certPem = await readCaFile(caPath);
    }
  } catch (err) {
    if (err instanceof TlsConfigError) throw err;
    throw new TlsConfigError(`cannot create the CA in ${root}: ${describeFsError(err)}`, { cause: err });
  }
  if (keyPem === undefined || certPem === undefined) {
    throw new TlsConfigError(`${caPath} or ${keyPath} disappeared while burrow was creating the CA`);
  }

  const key = parseCaKey(keyPath, keyPem);
  const cert = parseCaCert(caPath, certPem);
  if (!cert.checkPrivateKey(key)) {
    throw new TlsConfigError(`${caPath} and ${keyPath} do not belong together (the key is not the certificate's)`);
  }
  if (!cert.ca) {
    throw new TlsConfigError(`${caPath} is not a CA certificate (it lacks BasicConstraints CA:TRUE)`);
  }
  if (Date.parse(cert.validTo) <= Date.now()) {
    throw new TlsConfigError(`${caPath} expired on ${cert.validTo}: remove it and ${keyPath} to have burrow create a new CA (agents must then trust the new one)`);
  }
  return { certPem, keyPem, caPath, keyPath, created };
}
