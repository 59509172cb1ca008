// Mutual TLS at burrow (terminate-tls's mutual_tls_*): the client's chain checked against the CAs
// the policy names, after the handshake (Node's contexts are shared per served certificate, so
// the CAs cannot be in them).
import { X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate, PeerCertificate, TLSSocket } from 'node:tls';

export type MutualTlsStrategy = 'require-and-verify' | 'require-any' | 'request';

const MAX_CHAIN = 5;
const parsed = new WeakMap<readonly string[], X509Certificate[]>();

function authorities(cas: readonly string[]): X509Certificate[] {
  let list = parsed.get(cas);
  if (!list) {
    list = cas.map((pem) => new X509Certificate(pem));
    parsed.set(cas, list);
  }
  return list;
}

/** Whether the client's certificate satisfies the strategy. */
export function clientCertificateAccepted(secure: TLSSocket, cas: readonly string[], strategy: MutualTlsStrategy, now = new Date()): boolean {
  if (strategy === 'request') return true;
  const peer = secure.getPeerCertificate(true);
  if (!peer || !peer.raw) return false;
  if (strategy === 'require-any') return true;
  return chainsTo(peer, authorities(cas), now);
}

function chainsTo(leaf: DetailedPeerCertificate, cas: readonly X509Certificate[], now: Date): boolean {
  let current: PeerCertificate | DetailedPeerCertificate = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    const cert = new X509Certificate(current.raw);
    if (!withinValidity(cert, now)) return false;
    if (cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))) return true;
    const issuer: DetailedPeerCertificate | undefined = (current as DetailedPeerCertificate).issuerCertificate;
    if (!issuer || issuer === current || !issuer.raw) return false;
    const next = new X509Certificate(issuer.raw);
    if (!(cert.checkIssued(next) && cert.verify(next.publicKey) && next.ca)) return false;
    current = issuer;
  }
  return false;
}

function withinValidity(cert: X509Certificate, now: Date): boolean {
  return new Date(cert.validFrom) <= now && now <= new Date(cert.validTo);
}
