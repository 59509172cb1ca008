import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ListedEndpoint } from '../../domain/tunnels/types.js';
import { baseUrl } from '../pipeline/base-url.js';
import { nextPageUri, parsePaging } from '../common/paging.js';
import { ref, wireTime } from '../common/refs.js';
import { IdParams, PagingQuery, commonErrors, security } from '../common/schemas.js';
import type { LiveObjectRouteDeps } from '../tunnel-sessions/routes.js';
import { EndpointListResponse, EndpointRef } from './schemas.js';

const tags = ['Endpoints'];

export async function endpointRoutes(fastify: FastifyInstance, deps: LiveObjectRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { live, publicUrl } = deps;

  app.get(
    '/endpoints',
    {
      schema: {
        operationId: 'listEndpoints',
        summary: 'List the public URLs and addresses the account serves now, newest first.',
        tags,
        security,
        querystring: PagingQuery,
        response: { 200: EndpointListResponse, ...commonErrors },
      },
    },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await live.listEndpoints(request.principal, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}/endpoints`;
      return {
        endpoints: page.items.map((endpoint) => presentEndpoint(endpoint, base)),
        uri,
        next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit),
      };
    },
  );

  app.get(
    '/endpoints/:id',
    {
      schema: {
        operationId: 'getEndpoint',
        summary: 'Get one endpoint.',
        tags,
        security,
        params: IdParams,
        response: { 200: EndpointRef, ...commonErrors },
      },
    },
    async (request) => presentEndpoint(await live.getEndpoint(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );
}

/** The reference's ephemeral endpoint; fields it leaves out when empty are left out. */
function presentEndpoint(endpoint: ListedEndpoint, base: string) {
  return {
    id: endpoint.id,
    region: endpoint.region,
    created_at: wireTime(endpoint.createdAt),
    updated_at: wireTime(endpoint.updatedAt),
    public_url: endpoint.url,
    proto: endpoint.proto,
    hostport: `${endpoint.host}:${endpoint.port}`,
    host: endpoint.host,
    port: endpoint.port,
    type: 'ephemeral',
    metadata: endpoint.metadata === '' ? undefined : endpoint.metadata,
    tunnel: endpoint.tunnelId === null ? undefined : ref(endpoint.tunnelId, `${base}/tunnels/${endpoint.tunnelId}`),
    upstream_url: endpoint.forwardsTo === '' ? undefined : endpoint.forwardsTo,
    url: endpoint.url,
    // burrow serves no users or bot users API: like the reference for a user, no uri to give.
    principal: ref(endpoint.principalId, ''),
    traffic_policy: endpoint.trafficPolicy === '' ? undefined : endpoint.trafficPolicy,
    bindings: ['public'],
    tunnel_session: ref(endpoint.sessionId, `${base}/tunnel_sessions/${endpoint.sessionId}`),
    uri: `${base}/endpoints/${endpoint.id}`,
    pooling_enabled: endpoint.poolingEnabled,
  };
}
