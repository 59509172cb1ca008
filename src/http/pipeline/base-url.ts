import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.js';

/**
 * The absolute base of every `uri` field (SPEC §1): PUBLIC_URL when configured, otherwise the
 * request's own scheme and Host (forwarded ones only when TRUST_PROXY says so, which Fastify's
 * `request.protocol` and `request.host` already honour).
 */
export function baseUrl(request: FastifyRequest, publicUrl: string | undefined): string {
  if (publicUrl !== undefined) return publicUrl;
  return `${request.protocol.toLowerCase()}://${request.host || 'localhost'}`;
}

// A DNS name (underscores allowed, as in container service names), IPv4, or [IPv6], then a port.
const HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

const PORT = /:([0-9]+)$/;

function hostFields(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') count++;
  return count;
}

/**
 * HTTP/1.1 requires a Host header. Without PUBLIC_URL it also becomes part of every uri, so it
 * must then be a host[:port]: anything else ("evil.example/x?y#") would make those links point
 * elsewhere. Checked before anything is done, so a refused request changes nothing.
 */
export function checkHostHeader(request: FastifyRequest, hostMakesUris: boolean): void {
  const header = request.headers.host;
  if (header === undefined) {
    if (request.raw.httpVersion === '1.1') throw new ApiError(400, undefined, 'An HTTP/1.1 request must carry a Host header.');
    return;
  }
  // RFC 9112 §3.2: more than one Host field, or an invalid one, is answered 400. Node keeps the
  // first of several, so they are counted in the raw headers.
  if (hostFields(request.raw.rawHeaders) > 1) throw new ApiError(400, undefined, 'The request has more than one Host header. Send exactly one.');
  const port = PORT.exec(header)?.[1];
  if (port !== undefined && Number(port) > 65535) {
    throw new ApiError(400, undefined, 'The port in the Host header is above 65535. Send the host name and port the service is reached by.');
  }
  if (hostMakesUris && !HOST.test(request.host)) {
    throw new ApiError(400, undefined, 'The Host header is not a valid host[:port]. Send the host name the service is reached by.');
  }
  // a trusted proxy's X-Forwarded-Proto becomes the scheme of every uri: only a web one may
  const scheme = request.protocol.toLowerCase();
  if (hostMakesUris && scheme !== 'http' && scheme !== 'https') {
    throw new ApiError(400, undefined, 'The X-Forwarded-Proto header is neither http nor https. Send the scheme the service is reached by.');
  }
}
