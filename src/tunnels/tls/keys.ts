// Key pairs and the conversions between Node's KeyObject (PEM files, tls) and WebCrypto's
// CryptoKey (what @peculiar/x509 signs with).
import { createPrivateKey, webcrypto, type KeyObject } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const { subtle } = webcrypto;

/** ECDSA P-256: small, fast, accepted by rustls, Go, OpenSSL and browsers. */
export const LEAF_KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;

export interface GeneratedKeyPair {
  keys: CryptoKeyPair;
  /** The private key as PKCS#8 PEM ("BEGIN PRIVATE KEY"). */
  keyPem: string;
}

export async function generateP256(): Promise<GeneratedKeyPair> {
  const keys = (await subtle.generateKey(LEAF_KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const pkcs8 = Buffer.from(await subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'pem' });
  return { keys, keyPem: String(keyPem) };
}

export interface SigningKey {
  key: CryptoKey;
  /** The signature algorithm certificates signed with this key use. */
  signingAlgorithm: webcrypto.Algorithm | webcrypto.EcdsaParams;
}

/**
 * Imports a private key (any PEM form Node reads) for signing certificates. Supported: EC P-256
 * and P-384 (ECDSA with SHA-256 / SHA-384) and RSA (PKCS#1 v1.5 with SHA-256), so that a CA
 * made elsewhere (mkcert's is RSA) can be dropped into TLS_DIR.
 */
export async function importSigningKey(keyObject: KeyObject): Promise<SigningKey> {
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
  if (keyObject.asymmetricKeyType === 'ec') {
    const curve = keyObject.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === 'prime256v1' ? 'P-256' : curve === 'secp384r1' ? 'P-384' : undefined;
    if (!namedCurve) throw new Error(`unsupported EC curve ${curve ?? '(unknown)'} (P-256 and P-384 are)`);
    const hash = namedCurve === 'P-256' ? 'SHA-256' : 'SHA-384';
    const key = await subtle.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve }, false, ['sign']);
    return { key, signingAlgorithm: { name: 'ECDSA', hash } };
  }
  if (keyObject.asymmetricKeyType === 'rsa') {
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    const key = await subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign']);
    return { key, signingAlgorithm: algorithm };
  }
  throw new Error(`unsupported key type ${keyObject.asymmetricKeyType ?? '(unknown)'} (EC P-256/P-384 and RSA are)`);
}
