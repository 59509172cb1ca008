import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errors } from '../../domain/errors.js';
import type { SessionCommand, TunnelSession } from '../../domain/tunnels/types.js';
import type { LiveObjectRouteDeps } from '../common/live-objects.js';
import { getRoute, listRoute } from '../common/resource-routes.js';
import { ref, uris, wireTime } from '../common/refs.js';
import { IdParams, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { SessionCommandBody, TunnelSessionListResponse, TunnelSessionRef } from './schemas.js';

const tags = ['Tunnel Sessions'];

const COMMANDS: Record<SessionCommand, { summary: string; code: string }> = {
  stop: { summary: 'Tell the agent of the session to exit.', code: 'ERR_NGROK_805' },
  restart: { summary: 'Tell the agent of the session to restart itself.', code: 'ERR_NGROK_804' },
  update: { summary: 'Tell the agent of the session to update itself.', code: 'ERR_NGROK_806' },
};

export async function tunnelSessionRoutes(fastify: FastifyInstance, deps: LiveObjectRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { live, publicUrl } = deps;

  listRoute(app, {
    url: '/tunnel_sessions',
    field: 'tunnel_sessions',
    operationId: 'listTunnelSessions',
    summary: 'List the agent sessions of the account, newest first.',
    tags,
    response: TunnelSessionListResponse,
    list: (caller, beforeId, limit) => live.listSessions(caller, beforeId, limit),
    present: presentSession,
    publicUrl,
  });

  getRoute(app, {
    url: '/tunnel_sessions/:id',
    operationId: 'getTunnelSession',
    summary: 'Get one agent session.',
    tags,
    response: TunnelSessionRef,
    get: (caller, id) => live.getSession(caller, id),
    present: presentSession,
    publicUrl,
  });

  for (const [command, { summary, code }] of Object.entries(COMMANDS) as [SessionCommand, (typeof COMMANDS)[SessionCommand]][]) {
    app.post(
      `/tunnel_sessions/:id/${command}`,
      {
        schema: {
          operationId: `${command}TunnelSession`,
          summary,
          description: `204 once the command is on its way to the agent. 400 ${code} when the agent said in its Auth that it cannot do it (the session is left alone).`,
          tags,
          security,
          params: IdParams,
          body: SessionCommandBody,
          response: { 204: { type: 'null', description: 'Sent.' }, ...commonErrors, ...bodyErrors, 400: errorResponse(`Body errors, or ${code}: the agent does not support it.`) },
        },
        preParsing: bareIdAsNoBody,
      },
      async (request, reply) => {
        const { id } = request.params;
        if (request.body?.id != null && request.body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
        await live.command(request.principal, id, command);
        return reply.code(204).send(null);
      },
    );
  }
}

/**
 * The npm client (0.11) posts stop and restart with the session id itself, unquoted, as the body
 * (wretch sends a string as is, under its `Content-Type: application/json`). Exactly the path's
 * id is read as no body; every other body goes to the usual framing rules unchanged.
 */
async function bareIdAsNoBody(request: FastifyRequest, _reply: unknown, payload: Readable): Promise<Readable> {
  const id = (request.params as { id?: string }).id ?? '';
  if (id === '' || request.headers['content-length'] !== String(Buffer.byteLength(id))) return payload;
  const chunks: Buffer[] = [];
  for await (const chunk of payload) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const replacement = Readable.from(raw.toString('utf8') === id ? [] : [raw]);
  // Fastify compares what it read with Content-Length: the bytes received, not those passed on.
  (replacement as Readable & { receivedEncodedLength?: number }).receivedEncodedLength = raw.length;
  return replacement;
}

/** AGENT-PROTOCOL.md §9; an empty metadata is left out. */
export function presentSession(session: TunnelSession, base: string) {
  return {
    id: session.id,
    uri: uris.tunnelSession(base, session.id),
    agent_version: session.agentVersion,
    credential: ref(session.credentialId, uris.credential(base, session.credentialId)),
    ip: session.ip,
    metadata: session.metadata === '' ? undefined : session.metadata,
    os: session.os,
    region: session.region,
    started_at: wireTime(session.startedAt),
    transport: 'ngrok/2',
  };
}
