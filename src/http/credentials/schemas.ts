import Type, { type Static } from 'typebox';
import { Nullable } from '../common/schemas.js';

const description = Type.String({ maxLength: 255, description: 'Who or what uses the credential; at most 255 bytes of UTF-8.' });
const metadata = Type.String({ maxLength: 4096, description: 'Machine-readable data; at most 4096 bytes of UTF-8.' });
const acl = Type.Array(Type.String(), {
  maxItems: 100,
  description: 'Bind rules (`bind:<domain|*.domain|host:port|key=value>` or `*`); empty means unrestricted. At most 100 rules of 255 bytes.',
});

export const CreateCredentialBody = Type.Object(
  {
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
    acl: Type.Optional(Nullable(acl)),
    owner_id: Type.Optional(Nullable(Type.String({ description: 'User or bot that owns it; defaults to the caller. Admins only for others.' }))),
  },
  { additionalProperties: false },
);

export const UpdateCredentialBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))),
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
    acl: Type.Optional(Nullable(acl)),
  },
  { additionalProperties: false },
);

/** Field order is the wire order of SPEC §5.1; empty description and metadata are left out. */
export const CredentialResponse = Type.Object(
  {
    id: Type.String(),
    uri: Type.String(),
    created_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    description: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.String()),
    token: Type.Union([Type.String(), Type.Null()], {
      description: 'The authtoken: only in the answer to create, null everywhere else.',
    }),
    acl: Type.Array(Type.String()),
    owner_id: Type.String(),
  },
  { $id: 'Credential' },
);

/** Routes refer to the shared schema so OpenAPI shows one Credential component. */
export const CredentialRef = Type.Unsafe<Static<typeof CredentialResponse>>(Type.Ref('Credential'));

export const CredentialListResponse = Type.Object({
  credentials: Type.Array(CredentialRef),
  uri: Type.String(),
  next_page_uri: Type.Union([Type.String(), Type.Null()]),
});
