import Type, { type Static } from 'typebox';
import { Ref } from '../common/refs.js';
import { ListPage } from '../common/schemas.js';

/**
 * AGENT-PROTOCOL.md §9, fields the reference leaves out when empty left out too: a bound tunnel
 * has `public_url`, `proto` and `endpoint`; a labeled one `labels` (and `backends`, the tunnel
 * groups it serves, once there are any).
 */
export const TunnelResponse = Type.Object(
  {
    id: Type.String({ description: 'tn_<ksuid>.' }),
    public_url: Type.Optional(Type.String({ description: 'The URL the tunnel serves; absent for a labeled tunnel.' })),
    started_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    metadata: Type.Optional(Type.String({ description: 'The metadata the agent gave the tunnel.' })),
    proto: Type.Optional(Type.String({ description: 'http, https, tcp or tls; absent for a labeled tunnel.' })),
    region: Type.String(),
    tunnel_session: Ref,
    endpoint: Type.Optional({ ...Ref, description: 'The endpoint the tunnel serves; absent for a labeled tunnel.' }),
    labels: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'A labeled tunnel’s labels.' })),
    backends: Type.Optional(Type.Array(Ref, { description: 'The tunnel groups a labeled tunnel serves.' })),
    forwards_to: Type.String({ description: 'Where the agent says it forwards the traffic.' }),
  },
  { $id: 'Tunnel' },
);

export const TunnelRef = Type.Unsafe<Static<typeof TunnelResponse>>(Type.Ref('Tunnel'));

export const TunnelListResponse = ListPage('tunnels', TunnelRef);
