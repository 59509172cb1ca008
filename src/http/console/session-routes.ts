import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../../domain/accounts/types.js';
import type { ConsoleSessions } from '../../domain/console/sessions.js';
import { errors } from '../../domain/errors.js';
import { CSRF_HEADER, clearSessionCookie, headerValue, sessionCookie, setSessionCookie } from './session-cookie.js';

export interface ConsoleSessionRouteDeps {
  sessions: ConsoleSessions;
  publicUrl: string | undefined;
  /** What the console's snippets tell an agent: this server's agent address and CA file. */
  agentServer: { agent_addr: string | null; ca_file: string | null };
}

const config = { public: true };
const schema = { hide: true };

/**
 * Sign-in, who-am-I and sign-out for the console. Public routes (the gate would ask for an API
 * key): each checks what it needs itself. Not part of the reference API, so not in /openapi.json.
 */
export async function consoleSessionRoutes(app: FastifyInstance, deps: ConsoleSessionRouteDeps): Promise<void> {
  const { sessions, publicUrl } = deps;

  app.post('/console/session', { config, schema }, async (request, reply) => {
    const apiKey = (request.body as Record<string, unknown> | undefined)?.api_key;
    if (typeof apiKey !== 'string' || apiKey === '') throw errors.invalidField('api_key', 'must be the API key to sign in with');
    const signedIn = await sessions.signIn(apiKey);
    // A browser signing in again leaves no second live session behind.
    const previous = sessionCookie(request);
    if (previous !== undefined) await sessions.signOut(previous);
    setSessionCookie(request, reply, signedIn.sessionId, publicUrl);
    return reply.code(201).send(whoAmI(signedIn.principal, signedIn.csrfToken, deps.agentServer));
  });

  // The console reads its CSRF token here after a reload (the cookie is HttpOnly).
  app.get('/console/session', { config, schema }, async (request) => {
    const { principal, csrfToken } = await sessions.authenticate(requiredSession(request), false, undefined);
    return whoAmI(principal, csrfToken, deps.agentServer);
  });

  app.delete('/console/session', { config, schema }, async (request, reply) => {
    const id = requiredSession(request);
    await sessions.authenticate(id, true, headerValue(request, CSRF_HEADER));
    await sessions.signOut(id);
    clearSessionCookie(reply);
    return reply.code(204).send(null);
  });
}

function requiredSession(request: FastifyRequest): string {
  const id = sessionCookie(request);
  if (id === undefined) throw errors.consoleSessionEnded();
  return id;
}

function whoAmI(principal: Principal, csrfToken: string, server: ConsoleSessionRouteDeps['agentServer']) {
  return { csrf_token: csrfToken, principal: { id: principal.id, kind: principal.kind, name: principal.name, admin: principal.admin }, server };
}

/**
 * For the request gate: the principal of the session cookie when the request has no
 * Authorization header, so the console calls the REST API as its user (CSRF header on changes);
 * undefined without the cookie.
 */
export function consoleSessionAuth(sessions: ConsoleSessions): (request: FastifyRequest) => Promise<Principal> | undefined {
  return (request) => {
    const id = sessionCookie(request);
    if (id === undefined) return undefined;
    const write = request.method !== 'GET' && request.method !== 'HEAD';
    return sessions.authenticate(id, write, headerValue(request, CSRF_HEADER)).then((session) => session.principal);
  };
}
