import type { TunnelGroupBackendView } from '../../domain/tunnel-group-backends/types.js';
import { ref, uris } from '../common/refs.js';
import { presentDescribed } from '../common/present.js';

/** The wire shape of a tunnel group backend; empty description and metadata are left out. */
export function presentTunnelGroupBackend(group: TunnelGroupBackendView, base: string) {
  return {
    ...presentDescribed(group, uris.tunnelGroupBackend(base, group.id)),
    labels: group.labels,
    tunnels: group.tunnelIds.map((id) => ref(id, uris.tunnel(base, id))),
  };
}
