import type { TunnelGroupView } from '../../domain/backends/types.js';

export const tunnelGroupUri = (base: string, id: string) => `${base}/backends/tunnel_group/${id}`;

/** The wire shape of a tunnel group backend; empty description and metadata are left out. */
export function presentTunnelGroup(group: TunnelGroupView, base: string) {
  return {
    id: group.id,
    uri: tunnelGroupUri(base, group.id),
    created_at: group.createdAt,
    description: group.description === '' ? undefined : group.description,
    metadata: group.metadata === '' ? undefined : group.metadata,
    labels: group.labels,
    tunnels: group.tunnelIds.map((id) => ({ id, uri: `${base}/tunnels/${id}` })),
  };
}
