import Type, { type Static } from 'typebox';
import { ListPage, Nullable } from '../common/schemas.js';
import { Ref } from '../common/refs.js';

/** Field order of AGENT-PROTOCOL.md §9; an empty metadata is left out, as the reference does. */
export const TunnelSessionResponse = Type.Object(
  {
    id: Type.String({ description: 'ts_<ksuid>: the ClientId the agent was given.' }),
    uri: Type.String(),
    agent_version: Type.String({ description: "The agent's own version (its Auth's Extra.Version)." }),
    credential: Type.Unsafe<Static<typeof Ref>>({ ...Ref, description: 'The tunnel credential the agent authenticated with.' }),
    ip: Type.String({ description: "The agent's address as burrow saw it." }),
    metadata: Type.Optional(Type.String({ description: 'The session metadata the agent sent.' })),
    os: Type.String(),
    region: Type.String({ description: 'The REGION of the instance that holds the session.' }),
    started_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    transport: Type.String({ description: 'Always "ngrok/2".' }),
  },
  { $id: 'TunnelSession' },
);

export const TunnelSessionRef = Type.Unsafe<Static<typeof TunnelSessionResponse>>(Type.Ref('TunnelSession'));

export const TunnelSessionListResponse = ListPage('tunnel_sessions', TunnelSessionRef);

/**
 * The reference's bodies of stop, restart and update (`Item`, `TunnelSessionsUpdate`): an
 * optional `id`, which must then be the path's. An empty body is `{}`.
 */
export const SessionCommandBody = Type.Object(
  { id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))) },
  { additionalProperties: false },
);
