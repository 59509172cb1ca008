import type { FastifyInstance } from 'fastify';
import type { TunnelView } from '../../domain/live-objects/types.js';
import type { LiveObjectRouteDeps } from '../common/live-objects.js';
import { getRoute, listRoute } from '../common/resource-routes.js';
import { ref, uris, wireTime } from '../common/refs.js';
import { TunnelListResponse, TunnelRef } from './schemas.js';

const tags = ['Tunnels'];

export async function tunnelRoutes(app: FastifyInstance, deps: LiveObjectRouteDeps): Promise<void> {
  const { live, publicUrl } = deps;

  listRoute(app, {
    url: '/tunnels',
    field: 'tunnels',
    operationId: 'listTunnels',
    summary: 'List the tunnels of the account (binds and labeled tunnels), newest first.',
    tags,
    response: TunnelListResponse,
    list: (caller, beforeId, limit) => live.listTunnels(caller, beforeId, limit),
    present: presentTunnel,
    publicUrl,
  });

  getRoute(app, {
    url: '/tunnels/:id',
    operationId: 'getTunnel',
    summary: 'Get one tunnel.',
    tags,
    response: TunnelRef,
    get: (caller, id) => live.getTunnel(caller, id),
    present: presentTunnel,
    publicUrl,
  });
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
    tunnel_session: ref(tunnel.sessionId, uris.tunnelSession(base, tunnel.sessionId)),
    endpoint: tunnel.endpointId === null ? undefined : ref(tunnel.endpointId, uris.endpoint(base, tunnel.endpointId)),
    labels: tunnel.labels === null ? undefined : { ...tunnel.labels },
    backends: tunnel.labels === null ? undefined : tunnel.backendIds.map((id) => ref(id, uris.tunnelGroupBackend(base, id))),
    forwards_to: tunnel.forwardsTo,
  };
}
