import Type, { type Static } from 'typebox';
import { DESCRIPTION_MAX_BYTES, METADATA_MAX_BYTES } from '../../domain/text-limits.js';
import { Ref } from '../common/refs.js';
import { ListPage, Nullable, Utf8Text } from '../common/schemas.js';

const description = Utf8Text(DESCRIPTION_MAX_BYTES, 'ERR_NGROK_604', 'What the reserved domain is used for.');
const metadata = Utf8Text(METADATA_MAX_BYTES, 'ERR_NGROK_605', 'Machine-readable data.');
const region = Type.String({ description: 'The server\'s REGION (the default); burrow serves one region.' });
const certificateId = Type.String({ description: 'Not served: uploaded certificates are refused by name (ERR_NGROK_215).' });

const policy = Type.Object(
  {
    authority: Type.Optional(Nullable(Type.String({ description: '`letsencrypt` (the default): the ACME CA this server is configured with.' }))),
    private_key_type: Type.Optional(Nullable(Type.String({ description: '`rsa` (the default) or `ecdsa`.' }))),
  },
  { additionalProperties: false, description: 'Automatic certificates for the name from the configured ACME CA.' },
);

/** The reference's DNS resolver targets: only `null` or `[]` (global), since burrow has one region (checked by the route). */
const resolvesTo = Type.Array(Type.Object({ value: Type.String() }, { additionalProperties: false }), {
  description: 'Not served: burrow has one region; null or [] only.',
});

const editableFields = {
  description: Type.Optional(Nullable(description)),
  metadata: Type.Optional(Nullable(metadata)),
  certificate_id: Type.Optional(Nullable(certificateId)),
  certificate_management_policy: Type.Optional(Nullable(policy)),
  resolves_to: Type.Optional(Nullable(resolvesTo)),
};

export const CreateReservedDomainBody = Type.Object(
  {
    domain: Nullable(Type.String({ description: 'The name to reserve (`app.example.com`), or a wildcard (`*.example.com`) covering the names under it.' })),
    region: Type.Optional(Nullable(region)),
    ...editableFields,
  },
  { additionalProperties: false },
);

export const UpdateReservedDomainBody = Type.Object(
  { id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))), ...editableFields },
  { additionalProperties: false },
);

const Timestamp = Type.String({ description: 'RFC 3339, UTC, whole seconds.' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/** The reference API's shape; empty description and metadata are left out, as for credentials. */
export const ReservedDomainResponse = Type.Object(
  {
    id: Type.String(),
    uri: Type.String(),
    created_at: Timestamp,
    description: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.String()),
    domain: Type.String(),
    region: Type.String(),
    cname_target: Type.Union([Type.String(), Type.Null()], { description: 'Where the name\'s DNS should point (EDGE_PUBLIC_HOST); null under EDGE_DOMAIN or when that host is an IP address.' }),
    certificate: Type.Union([Ref, Type.Null()], { description: 'Always null: no uploaded or issued certificate is attached yet.' }),
    certificate_management_policy: Type.Union([Type.Object({ authority: Type.String(), private_key_type: Type.String() }), Type.Null()]),
    certificate_management_status: Type.Union([
      Type.Object({
        renews_at: NullableTimestamp,
        provisioning_job: Type.Union([
          Type.Object({
            error_code: Type.Union([Type.String(), Type.Null()], { description: '`ACME_NOT_CONFIGURED` while this server has no ACME CA.' }),
            msg: Type.String(),
            started_at: Timestamp,
            retries_at: NullableTimestamp,
          }),
          Type.Null(),
        ]),
      }),
      Type.Null(),
    ]),
    acme_challenge_cname_target: Type.Union([Type.String(), Type.Null()], { description: 'Always null: DNS-01 goes through ACME_DNS_HOOK.' }),
  },
  { $id: 'ReservedDomain' },
);

export const ReservedDomainRef = Type.Unsafe<Static<typeof ReservedDomainResponse>>(Type.Ref('ReservedDomain'));

export const ReservedDomainListResponse = ListPage('reserved_domains', ReservedDomainRef);
