import Type from 'typebox';
import { BODY_LIMIT_MAX_BYTES, CAPTURE_MODES } from '../../domain/inspection/types.js';
import { ListPage, Nullable } from '../common/schemas.js';

const capture = Type.Union(
  CAPTURE_MODES.map((mode) => Type.Literal(mode)),
  { description: 'off (default), heads (method, path, headers, status) or bodies (heads and bodies up to body_limit_bytes).' },
);
// A negative value is refused by the service (InspectionService.updateSettings), naming the field.
const bodyLimit = Type.Integer({ maximum: BODY_LIMIT_MAX_BYTES, description: `Bytes of each body kept (default 65536, at most ${BODY_LIMIT_MAX_BYTES}).` });
const redact = Type.Boolean({ description: 'Store secret headers (Authorization, Cookie, Set-Cookie, …) as "[REDACTED]" (default true).' });

export const InspectionSettingsResponse = Type.Object({ capture, body_limit_bytes: bodyLimit, redact_secrets: redact });

export const UpdateInspectionSettingsBody = Type.Object(
  {
    capture: Type.Optional(Nullable(capture)),
    body_limit_bytes: Type.Optional(Nullable(bodyLimit)),
    redact_secrets: Type.Optional(Nullable(redact)),
  },
  { additionalProperties: false },
);

const headers = Type.Record(Type.String(), Type.Array(Type.String()), { description: 'Lower-case name → values in order.' });
const body = Type.Object({
  data: Type.String({ description: 'base64 of the captured bytes.' }),
  length: Type.Integer({ description: 'The whole body’s length.' }),
  truncated: Type.Boolean(),
});

export const InspectedRequestResponse = Type.Object(
  {
    id: Type.String({ description: 'req_<ksuid>.' }),
    uri: Type.String(),
    created_at: Type.String(),
    method: Type.String(),
    path: Type.String({ description: 'With the query.' }),
    status: Type.Integer(),
    duration_ms: Type.Number(),
    client_ip: Type.String(),
    request_headers: headers,
    response_headers: headers,
    actions: Type.Array(Type.String(), { description: 'Traffic policy actions taken, in order.' }),
    request_body: Type.Optional(body),
    response_body: Type.Optional(body),
  },
  { $id: 'InspectedRequest' },
);

export const InspectedRequestListResponse = ListPage('requests', Type.Ref('InspectedRequest'));

export const RequestParams = Type.Object({ id: Type.String({ description: 'Endpoint id.' }), rid: Type.String({ description: 'Request id.' }) });
