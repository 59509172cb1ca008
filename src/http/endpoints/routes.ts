import type { FastifyInstance } from 'fastify';
import type { ListedEndpoint } from '../../domain/live-objects/types.js';
import type { LiveObjectRouteDeps } from '../common/live-objects.js';
import { getRoute, listRoute } from '../common/resource-routes.js';
import { ref, uris, wireTime } from '../common/refs.js';
import { EndpointListResponse, EndpointRef } from './schemas.js';

const tags = ['Endpoints'];

export async function endpointRoutes(app: FastifyInstance, deps: LiveObjectRouteDeps): Promise<void> {
  const { live, publicUrl } = deps;

  listRoute(app, {
    url: '/endpoints',
    field: 'endpoints',
    operationId: 'listEndpoints',
    summary: 'List the public URLs and addresses the account serves now, newest first.',
    tags,
    response: EndpointListResponse,
    list: (caller, beforeId, limit) => live.listEndpoints(caller, beforeId, limit),
    present: presentEndpoint,
    publicUrl,
  });

  getRoute(app, {
    url: '/endpoints/:id',
    operationId: 'getEndpoint',
    summary: 'Get one endpoint.',
    tags,
    response: EndpointRef,
    get: (caller, id) => live.getEndpoint(caller, id),
    present: presentEndpoint,
    publicUrl,
  });
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
    tunnel: endpoint.tunnelId === null ? undefined : ref(endpoint.tunnelId, uris.tunnel(base, endpoint.tunnelId)),
    upstream_url: endpoint.forwardsTo === '' ? undefined : endpoint.forwardsTo,
    url: endpoint.url,
    // burrow serves no users or bot users API: like the reference for a user, no uri to give.
    principal: ref(endpoint.principalId, ''),
    traffic_policy: endpoint.trafficPolicy === '' ? undefined : endpoint.trafficPolicy,
    bindings: ['public'],
    tunnel_session: ref(endpoint.sessionId, uris.tunnelSession(base, endpoint.sessionId)),
    uri: uris.endpoint(base, endpoint.id),
    pooling_enabled: endpoint.poolingEnabled,
  };
}
