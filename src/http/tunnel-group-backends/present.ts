import type { TunnelGroupBackendView } from '../../domain/tunnel-group-backends/types.js';
import { ref, uris } from '../common/refs.js';

/** The wire shape of a tunnel group backend; empty description and metadata are left out. */
export function presentTunnelGroupBackend(group: TunnelGroupBackendView, base: string) {
  return {
    id: group.id,
    uri: uris.tunnelGroupBackend(base, group.id),
    created_at: group.createdAt,
    description: group.description === '' ? undefined : group.description,
    metadata: group.metadata === '' ? undefined : group.metadata,
    labels: group.labels,
    tunnels: group.tunnelIds.map((id) => ref(id, uris.tunnel(base, id))),
  };
}
