import type { FastifyRequest } from 'fastify';

/**
 * The absolute base of every `uri` field (SPEC §1): PUBLIC_URL when configured, otherwise the
 * request's own scheme and Host (forwarded ones only when TRUST_PROXY says so, which Fastify's
 * `request.protocol` and `request.host` already honour).
 */
export function baseUrl(request: FastifyRequest, publicUrl: string | undefined): string {
  if (publicUrl !== undefined) return publicUrl;
  return `${request.protocol}://${request.host || 'localhost'}`;
}
