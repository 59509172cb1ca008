import Type, { type Static } from 'typebox';
import { DESCRIPTION_MAX_BYTES, METADATA_MAX_BYTES } from '../../domain/text-limits.js';
import { ListPage, Nullable, Utf8Text } from '../common/schemas.js';

const description = Utf8Text(DESCRIPTION_MAX_BYTES, 'ERR_NGROK_604', 'What the reserved address is used for.');
const metadata = Utf8Text(METADATA_MAX_BYTES, 'ERR_NGROK_605', 'Machine-readable data.');

/** The reference's create names no address: burrow gives a free port of EDGE_TCP_PORTS. */
export const CreateReservedAddrBody = Type.Object(
  {
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
    region: Type.Optional(Nullable(Type.String({ description: 'The server\'s REGION (the default); burrow serves one region.' }))),
  },
  { additionalProperties: false },
);

export const UpdateReservedAddrBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))),
    description: Type.Optional(Nullable(description)),
    metadata: Type.Optional(Nullable(metadata)),
  },
  { additionalProperties: false },
);

/** The reference API's shape; empty description and metadata are left out, as for credentials. */
export const ReservedAddrResponse = Type.Object(
  {
    id: Type.String(),
    uri: Type.String(),
    created_at: Type.String({ description: 'RFC 3339, UTC, whole seconds.' }),
    description: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.String()),
    addr: Type.String({ description: '`EDGE_PUBLIC_HOST:port`, the port given at create.' }),
    region: Type.String(),
  },
  { $id: 'ReservedAddr' },
);

export const ReservedAddrRef = Type.Unsafe<Static<typeof ReservedAddrResponse>>(Type.Ref('ReservedAddr'));

export const ReservedAddrListResponse = ListPage('reserved_addrs', ReservedAddrRef);
