import Type, { type Static } from 'typebox';
import { ACL_MAX_RULES, ACL_RULE_MAX_BYTES } from '../../domain/acl.js';
import { DESCRIPTION_MAX_BYTES, METADATA_MAX_BYTES } from '../../domain/text-limits.js';
import { ListPage, Nullable, Utf8Text } from '../common/schemas.js';

const description = Utf8Text(DESCRIPTION_MAX_BYTES, 'ERR_NGROK_604', 'Who or what uses the credential.');
const metadata = Utf8Text(METADATA_MAX_BYTES, 'ERR_NGROK_605', 'Machine-readable data.');
/** SPEC §5.3: both the count and each rule's bytes are answered 600 by validateAcl. */
const acl = Type.Array(Type.String({ 'x-max-bytes': ACL_RULE_MAX_BYTES, description: `At most ${ACL_RULE_MAX_BYTES} bytes of UTF-8.` }), {
  maxItems: ACL_MAX_RULES,
  'x-error-code': 'ERR_NGROK_600',
  description: `Bind rules (\`bind:<domain|*.domain|host:port|key=value>\` or \`*\`); empty means unrestricted. At most ${ACL_MAX_RULES} rules of ${ACL_RULE_MAX_BYTES} bytes of UTF-8.`,
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

export const CredentialListResponse = ListPage('credentials', CredentialRef);
