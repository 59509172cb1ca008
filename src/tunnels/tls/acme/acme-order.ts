// One certificate order with acme-client (RFC 8555 is its business: no JOSE here). The challenge
// answers go to the database first, so whichever instance the CA reaches can answer.
import { X509Certificate } from 'node:crypto';
import acme from 'acme-client';
import type { AcmeChallengeType, AcmeConfig } from '../../../config.js';
import { challengeKey } from '../../../domain/acme/schedule.js';
import type { AcmeKeyType, AcmeRepository } from '../../../domain/acme/types.js';
import { dnsRecordOf, runDnsHook } from './dns-hook.js';

// acme-client retries a failed request up to 5 times, 5 s more each time (75 s before an order
// fails when the CA is down); burrow retries the whole order with its own backoff, so twice is enough.
(acme.axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number } }).acmeSettings.retryMaxAttempts = 2;

/** How long a stored challenge answer stays valid: past any validation the CA makes. */
const CHALLENGE_TTL_MS = 3_600_000;

export interface IssuedAcmeCertificate {
  /** The leaf and its chain, PEM. */
  readonly certPem: string;
  readonly keyPem: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

export interface OrderContext {
  readonly config: AcmeConfig;
  readonly client: acme.Client;
  readonly repository: AcmeRepository;
  /** The challenge types this instance can answer, in order of preference. */
  readonly challenges: readonly AcmeChallengeType[];
}

/** RSA keys of 2048 bits, as Let's Encrypt's clients make by default; ECDSA on P-256. */
const RSA_BITS = 2048;

export async function orderCertificate(context: OrderContext, name: string, keyType: AcmeKeyType): Promise<IssuedAcmeCertificate> {
  const key = keyType === 'rsa' ? await acme.crypto.createPrivateRsaKey(RSA_BITS) : await acme.crypto.createPrivateEcdsaKey();
  const [keyPem, csr] = await acme.crypto.createCsr({ commonName: name, altNames: [name] }, key);
  const keyOf = (challenge: { type: string; token: string }) => challengeKey(challenge.type === 'http-01' ? 'http-01' : 'tls-alpn-01', challenge.type === 'http-01' ? challenge.token : name);
  const hook = context.config.dnsHook;
  // a wildcard can only be validated through DNS (RFC 8555 §7.1.3)
  const wildcard = name.startsWith('*.');
  if (wildcard && hook === undefined) throw new Error(`${name} is a wildcard: it needs ACME_DNS_HOOK (dns-01)`);
  const certPem = await context.client.auto({
    csr,
    email: context.config.email,
    termsOfServiceAgreed: true,
    challengePriority: wildcard ? ['dns-01'] : [...context.challenges],
    // acme-client's own check resolves the name and dials it from here: the CA's view is what counts
    skipChallengeVerification: true,
    challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
      if (challenge.type === 'dns-01') return runDnsHook(hook!, 'set', dnsRecordOf(name), keyAuthorization);
      await context.repository.putChallenge(keyOf(challenge), keyAuthorization, Date.now() + CHALLENGE_TTL_MS);
    },
    challengeRemoveFn: async (_authz, challenge, keyAuthorization) => {
      if (challenge.type === 'dns-01') return runDnsHook(hook!, 'unset', dnsRecordOf(name), keyAuthorization);
      await context.repository.deleteChallenge(keyOf(challenge));
    },
  });
  const leaf = new X509Certificate(certPem);
  return { certPem, keyPem: keyPem.toString(), notBefore: Date.parse(leaf.validFrom), notAfter: Date.parse(leaf.validTo) };
}

/** The client of the configured directory, with the account key; its account is registered (or found) once. */
export async function acmeClient(config: AcmeConfig, accountKeyPem: string): Promise<acme.Client> {
  const client = new acme.Client({
    directoryUrl: config.directoryUrl,
    accountKey: accountKeyPem,
    ...(config.eab ? { externalAccountBinding: config.eab } : {}),
    // polls for a challenge's and an order's status from half a second up, not acme-client's 5 s
    backoffMin: 500,
    backoffMax: 10_000,
    backoffAttempts: 12,
  });
  // the same key finds the same account again (RFC 8555 §7.3.1)
  try {
    await client.createAccount({ termsOfServiceAgreed: true, ...(config.email ? { contact: [`mailto:${config.email}`] } : {}) });
  } catch (error) {
    // The key's account exists (registered by another instance, or before a restart): the CA
    // answered 200 with its URL, and acme-client then sent an update that a CA may refuse as
    // empty (pebble does when there is no contact). The account is there: read it (POST-as-GET).
    if (!hasAccountUrl(client)) throw error;
    await client.updateAccount();
  }
  return client;
}

function hasAccountUrl(client: acme.Client): boolean {
  try {
    return client.getAccountUrl() !== '';
  } catch {
    return false;
  }
}

export async function newAccountKey(): Promise<string> {
  return (await acme.crypto.createPrivateEcdsaKey()).toString();
}

/** The self-signed certificate RFC 8737 answers a tls-alpn-01 validation with. */
export async function alpnChallengeCertificate(name: string, keyAuthorization: string, keyPem: string): Promise<{ cert: string; key: string }> {
  const authz = { identifier: { type: 'dns', value: name } } as unknown as acme.Authorization;
  const [key, cert] = await acme.crypto.createAlpnCertificate(authz, keyAuthorization, keyPem);
  return { cert: cert.toString(), key: key.toString() };
}
