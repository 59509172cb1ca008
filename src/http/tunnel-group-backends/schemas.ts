import Type, { type Static } from 'typebox';
import { DESCRIPTION_MAX_BYTES, METADATA_MAX_BYTES } from '../../domain/text-limits.js';
import { Ref } from '../common/refs.js';
import { ListPage, Nullable, Utf8Text } from '../common/schemas.js';

const description = Utf8Text(DESCRIPTION_MAX_BYTES, 'ERR_NGROK_604', 'What the tunnel group is for.');
const metadata = Utf8Text(METADATA_MAX_BYTES, 'ERR_NGROK_605', 'Machine-readable data.');

/**
 * A map of labels. `additionalProperties` (not TypeBox's Record, whose patternProperties OpenAPI
 * 3.0 lacks); the request validator reads it as a map of strings.
 */
const labels = (text: string) =>
  Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' }, description: text });

const requestLabels = labels(
  '1 to 10 labels; keys and values 1-63 of [A-Za-z0-9_.-]. The group holds the live labeled tunnels whose labels include all of them.',
);

export const CreateTunnelGroupBackendBody = Type.Object(
  {
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
    labels: Nullable(requestLabels),
  },
  { additionalProperties: false },
);

export const UpdateTunnelGroupBackendBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))),
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
    labels: Type.Optional(Nullable(requestLabels)),
  },
  { additionalProperties: false },
);

/** AGENT-PROTOCOL.md §9's shape; empty description and metadata are left out, as for credentials. */
export const TunnelGroupBackendResponse = Type.Object(
  {
    id: Type.String(),
    uri: Type.String(),
    created_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    description: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.String()),
    labels: labels('The labels, keys sorted.'),
    tunnels: Type.Array(Ref, { description: 'The live labeled tunnels whose labels include all of the labels, oldest first.' }),
  },
  { $id: 'TunnelGroupBackend' },
);

export const TunnelGroupBackendRef = Type.Unsafe<Static<typeof TunnelGroupBackendResponse>>(Type.Ref('TunnelGroupBackend'));

export const TunnelGroupBackendListResponse = ListPage('backends', TunnelGroupBackendRef);
