import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TunnelView } from '../../domain/tunnels/live-objects.js';
import { baseUrl } from '../pipeline/base-url.js';
import { nextPageUri, parsePaging } from '../common/paging.js';
import { ref, wireTime } from '../common/refs.js';
import { IdParams, PagingQuery, commonErrors, security } from '../common/schemas.js';
import type { LiveObjectRouteDeps } from '../tunnel-sessions/routes.js';
import { TunnelListResponse, TunnelRef } from './schemas.js';

const tags = ['Tunnels'];

export async function tunnelRoutes(fastify: FastifyInstance, deps: LiveObjectRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { live, publicUrl } = deps;

  app.get(
    '/tunnels',
    {
      schema: {
        operationId: 'listTunnels',
        summary: 'List the tunnels of the account (binds and labeled tunnels), newest first.',
        tags,
        security,
        querystring: PagingQuery,
        response: { 200: TunnelListResponse, ...commonErrors },
      },
    },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await live.listTunnels(request.principal, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}/tunnels`;
      return {
        tunnels: page.items.map((tunnel) => presentTunnel(tunnel, base)),
        uri,
        next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit),
      };
    },
  );

  app.get(
    '/tunnels/:id',
    {
      schema: {
        operationId: 'getTunnel',
        summary: 'Get one tunnel.',
        tags,
        security,
        params: IdParams,
        response: { 200: TunnelRef, ...commonErrors },
      },
    },
    async (request) => presentTunnel(await live.getTunnel(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );
}

/** AGENT-PROTOCOL.md §9: what a bound or a labeled tunnel does not have is left out. */
function presentTunnel(tunnel: TunnelView, base: string) {
  return {
    id: tunnel.id,
    public_url: tunnel.publicUrl ?? undefined,
    started_at: wireTime(tunnel.startedAt),
    metadata: tunnel.metadata === '' ? undefined : tunnel.metadata,
    proto: tunnel.proto === '' ? undefined : tunnel.proto,
    region: tunnel.region,
    tunnel_session: ref(tunnel.sessionId, `${base}/tunnel_sessions/${tunnel.sessionId}`),
    endpoint: tunnel.endpointId === null ? undefined : ref(tunnel.endpointId, `${base}/endpoints/${tunnel.endpointId}`),
    labels: tunnel.labels === null ? undefined : { ...tunnel.labels },
    backends: tunnel.labels === null ? undefined : tunnel.backendIds.map((id) => ref(id, `${base}/backends/tunnel_group/${id}`)),
    forwards_to: tunnel.forwardsTo,
  };
}
