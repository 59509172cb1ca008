import Type, { type Static } from 'typebox';
import { Ref } from '../common/refs.js';
import { ListPage } from '../common/schemas.js';

/**
 * An ephemeral endpoint (TUNNELS.md §3), with the reference's field names; fields it leaves out
 * when empty (metadata, traffic_policy, upstream_url) are left out too.
 */
export const EndpointResponse = Type.Object(
  {
    id: Type.String({ description: 'ep_<ksuid>.' }),
    region: Type.String(),
    created_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    updated_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    public_url: Type.String(),
    proto: Type.String({ description: 'http, https, tcp or tls.' }),
    hostport: Type.String({ description: 'host:port served.' }),
    host: Type.String(),
    port: Type.Integer(),
    type: Type.String({ description: 'Always "ephemeral": started by an agent.' }),
    metadata: Type.Optional(Type.String({ description: 'The metadata of the tunnel serving it.' })),
    tunnel: Type.Optional({ ...Ref, description: 'The tunnel serving it (the oldest, when pooled).' }),
    upstream_url: Type.Optional(Type.String({ description: 'Where that tunnel’s agent forwards the traffic.' })),
    url: Type.String(),
    principal: { ...Ref, description: 'The user or bot that owns the credential of the agent (uri empty: burrow serves no users API).' },
    traffic_policy: Type.Optional(Type.String({ description: 'The traffic policy the agent attached.' })),
    bindings: Type.Array(Type.String(), { description: 'Always ["public"].' }),
    tunnel_session: Ref,
    uri: Type.String(),
    pooling_enabled: Type.Boolean(),
  },
  { $id: 'Endpoint' },
);

export const EndpointRef = Type.Unsafe<Static<typeof EndpointResponse>>(Type.Ref('Endpoint'));

export const EndpointListResponse = ListPage('endpoints', EndpointRef);
