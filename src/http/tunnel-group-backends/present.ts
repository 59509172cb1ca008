import type { TunnelGroupBackendView } from '../../domain/tunnel-group-backends/types.js';

export const tunnelGroupBackendUri = (base: string, id: string) => `${base}/backends/tunnel_group/${id}`;

/** The wire shape of a tunnel group backend; empty description and metadata are left out. */
export function presentTunnelGroupBackend(group: TunnelGroupBackendView, base: string) {
  return {
    id: group.id,
    uri: tunnelGroupBackendUri(base, group.id),
    created_at: group.createdAt,
    description: group.description === '' ? undefined : group.description,
    metadata: group.metadata === '' ? undefined : group.metadata,
    labels: group.labels,
    tunnels: group.tunnelIds.map((id) => ({ id, uri: `${base}/tunnels/${id}` })),
  };
}
