import Type, { type Static } from 'typebox';
import { DESCRIPTION_MAX_BYTES, METADATA_MAX_BYTES } from '../../domain/text-limits.js';
import { ListPage, Nullable, Utf8Text } from '../common/schemas.js';

const description = Utf8Text(DESCRIPTION_MAX_BYTES, 'ERR_NGROK_604', 'What uses the API key.');
const metadata = Utf8Text(METADATA_MAX_BYTES, 'ERR_NGROK_605', 'Machine-readable data.');

export const CreateApiKeyBody = Type.Object(
  {
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
    owner_id: Type.Optional(Nullable(Type.String({ description: 'User or bot that owns it; defaults to the caller. Admins only for others.' }))),
  },
  { additionalProperties: false },
);

export const UpdateApiKeyBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))),
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
  },
  { additionalProperties: false },
);

/** The reference API's field order; empty description and metadata are left out. */
export const ApiKeyResponse = Type.Object(
  {
    id: Type.String(),
    uri: Type.String(),
    description: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.String()),
    created_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    token: Type.Union([Type.String(), Type.Null()], {
      description: 'The API key itself: only in the answer to create, null everywhere else.',
    }),
    owner_id: Type.String(),
  },
  { $id: 'ApiKey' },
);

export const ApiKeyRef = Type.Unsafe<Static<typeof ApiKeyResponse>>(Type.Ref('ApiKey'));

export const ApiKeyListResponse = ListPage('keys', ApiKeyRef);
