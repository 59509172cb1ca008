// ACME validations (RFC 8555 §8.3, RFC 8737), answered before any routing, from the challenges
// in the database: whichever instance the CA reaches answers.
import type http from 'node:http';
import type net from 'node:net';
import tls from 'node:tls';
import type { PublicConnection } from './connections.js';

export const ACME_HTTP_PATH = '/.well-known/acme-challenge/';
export const ACME_TLS_ALPN = 'acme-tls/1';
const VALIDATION_TIMEOUT_MS = 10_000;

/** Where the answers come from (tls/acme/acme-certificates.ts). */
export interface AcmeChallenges {
  httpChallenge(token: string): Promise<string | undefined>;
  alpnChallenge(name: string): Promise<tls.SecureContext | undefined>;
}

/** http-01: the key authorization of the token the path names, or 404. */
export async function answerHttpChallenge(challenges: AcmeChallenges, req: http.IncomingMessage, res: http.ServerResponse, conn: PublicConnection): Promise<void> {
  conn.outcome = 'acme_challenge';
  const token = req.url!.slice(ACME_HTTP_PATH.length);
  let keyAuthorization: string | undefined;
  try {
    // a token is base64url (RFC 8555 §8.1); anything else is no challenge of ours
    keyAuthorization = /^[A-Za-z0-9_-]{1,256}$/.test(token) ? await challenges.httpChallenge(token) : undefined;
  } catch {
    keyAuthorization = undefined;
  }
  const body = keyAuthorization ?? 'No such ACME challenge.\n';
  res.writeHead(keyAuthorization === undefined ? 404 : 200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** tls-alpn-01: a handshake with the challenge certificate for `sni`, then the close; none pending → the socket is closed. */
export async function answerAlpnChallenge(challenges: AcmeChallenges, socket: net.Socket, clientHello: Buffer, sni: string, conn: PublicConnection): Promise<void> {
  conn.outcome = 'acme_challenge';
  let secureContext: tls.SecureContext | undefined;
  try {
    secureContext = await challenges.alpnChallenge(sni);
  } catch {
    secureContext = undefined;
  }
  if (!secureContext || socket.destroyed) return void socket.destroy();
  socket.unshift(clientHello);
  const secure = new tls.TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: [ACME_TLS_ALPN] });
  const timer = setTimeout(() => secure.destroy(), VALIDATION_TIMEOUT_MS);
  secure.on('error', () => secure.destroy());
  secure.once('secure', () => secure.end());
  secure.once('close', () => {
    clearTimeout(timer);
    socket.destroy();
  });
  secure.resume();
}
