import type { FastifyReply, FastifyRequest } from 'fastify';

/** The console's session cookie (CONSOLE.md §3). Its value is opaque; the API key never leaves the server. */
export const SESSION_COOKIE = 'burrow_console';
/** The header that carries the session's CSRF token on every change. */
export const CSRF_HEADER = 'x-csrf-token';

/** The session cookie's value, or undefined. Other cookies are ignored. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) {
      const value = part.slice(at + 1).trim();
      return /^[A-Za-z0-9_-]{20,100}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/** A request header as one string, or undefined. */
export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), Path=/ (it
 * authenticates the REST calls too), Secure when the console is reached over HTTPS. No
 * Max-Age: the server ends idle sessions, and the browser drops it when closed.
 */
export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, value: string, publicUrl: string | undefined): void {
  const secure = request.protocol === 'https' || publicUrl?.startsWith('https:') === true;
  reply.header('Set-Cookie', `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`);
}

export function clearSessionCookie(reply: FastifyReply): void {
  reply.header('Set-Cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
}
