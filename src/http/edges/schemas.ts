import Type, { type Static } from 'typebox';
import { HOSTPORTS_MAX } from '../../domain/edges/service.js';
import { POLICY_MAX_BYTES } from '../../domain/policy/limits.js';
import { DESCRIPTION_MAX_BYTES, METADATA_MAX_BYTES } from '../../domain/text-limits.js';
import { Ref } from '../common/refs.js';
import { ListPage, Nullable, Utf8Text } from '../common/schemas.js';

const description = Utf8Text(DESCRIPTION_MAX_BYTES, 'ERR_NGROK_604', 'What the edge is for.');
const metadata = Utf8Text(METADATA_MAX_BYTES, 'ERR_NGROK_605', 'Machine-readable data.');
const hostports = Type.Array(Type.String(), {
  maxItems: HOSTPORTS_MAX,
  description: `host:port pairs served by the edge (host a domain or IPv4, port 1-65535); at most ${HOSTPORTS_MAX}.`,
});
const policyDocument = (description: string) => Utf8Text(POLICY_MAX_BYTES, 'ERR_NGROK_2221', description);

export const TrafficPolicyModuleBody = Type.Object(
  {
    enabled: Type.Optional(Nullable(Type.Boolean({ description: 'Whether the policy applies; true when absent or null.' }))),
    value: policyDocument('The policy document, YAML or JSON, stored byte for byte.'),
  },
  { additionalProperties: false },
);

/** The backend module as edge bodies and its PUT carry it (TUNNELS.md §4). */
export const BackendModuleBody = Type.Object(
  {
    enabled: Type.Optional(Nullable(Type.Boolean({ description: 'Whether connections go to the backend; true when absent or null.' }))),
    backend_id: Type.String({ description: 'A tunnel group backend (bkdtg_…) of the account.' }),
  },
  { additionalProperties: false },
);

const terminationFields = {
  enabled: Type.Optional(Nullable(Type.Boolean({ description: 'Whether the module applies; true when absent or null.' }))),
  terminate_at: Type.Optional(
    Nullable(Type.String({ description: '`edge`: burrow terminates TLS and the backend receives plaintext; `upstream` (when absent): passthrough.' })),
  ),
  min_version: Type.Optional(
    Nullable(Type.String({ description: 'The lowest TLS version accepted when terminating at the edge: 1.0, 1.1, 1.2 or 1.3; null with upstream.' })),
  ),
};

/** The tls_termination module as edge bodies and its PUT carry it (HTTP-POLICY.md §5). */
export const TlsTerminationModuleBody = Type.Object(terminationFields, { additionalProperties: false });

/** PUT /edges/tls/{id}/tls_termination: flat or wrapped, as the other modules' PUT. */
export const ReplaceTlsTerminationBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Wrapped form: the edge id; must equal the path id.' }))),
    module: Type.Optional(Nullable(TlsTerminationModuleBody)),
    ...terminationFields,
  },
  { additionalProperties: false },
);

export const TlsTerminationModuleResponse = Type.Object(
  {
    enabled: Type.Boolean(),
    terminate_at: Type.String(),
    min_version: Type.Optional(Type.String()),
  },
  { $id: 'EndpointTLSTermination' },
);

export const TlsTerminationModuleRef = Type.Unsafe<Static<typeof TlsTerminationModuleResponse>>(Type.Ref('EndpointTLSTermination'));

/** Modules of the reference API that burrow does not serve: only null is accepted (compat). */
const unserved = (module: string) =>
  Type.Optional(Type.Null({ description: `The ${module} module is not served by burrow; null or absent only.` }));

const unservedModules = {
  ip_restriction: unserved('IP restriction'),
  mutual_tls: unserved('mutual TLS'),
  policy: unserved('policy'),
};

const editableFields = {
  description: Type.Optional(Nullable(description)),
  metadata: Type.Optional(Nullable(metadata)),
  hostports: Type.Optional(Nullable(hostports)),
  backend: Type.Optional(Nullable(BackendModuleBody)),
  traffic_policy: Type.Optional(Nullable(TrafficPolicyModuleBody)),
  tls_termination: Type.Optional(Nullable(TlsTerminationModuleBody)),
  ...unservedModules,
};

export const CreateTlsEdgeBody = Type.Object(editableFields, { additionalProperties: false });

export const UpdateTlsEdgeBody = Type.Object(
  { id: Type.Optional(Nullable(Type.String({ description: 'Must equal the id in the path when given.' }))), ...editableFields },
  { additionalProperties: false },
);

/**
 * PUT accepts the module itself (`enabled`, `value`) or wrapped (`id`, `module`), because the
 * reference clients disagree (SPEC §7.2). The shapes are told apart in the handler.
 */
export const ReplaceTrafficPolicyBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Wrapped form: the edge id; must equal the path id.' }))),
    module: Type.Optional(Nullable(TrafficPolicyModuleBody)),
    enabled: Type.Optional(Nullable(Type.Boolean({ description: 'Flat form: true when absent or null.' }))),
    value: Type.Optional(Nullable(policyDocument('Flat form: the policy document (required in that form).'))),
  },
  { additionalProperties: false },
);

/** PUT /edges/tls/{id}/backend: flat or wrapped, as the traffic policy module's PUT. */
export const ReplaceBackendBody = Type.Object(
  {
    id: Type.Optional(Nullable(Type.String({ description: 'Wrapped form: the edge id; must equal the path id.' }))),
    module: Type.Optional(Nullable(BackendModuleBody)),
    enabled: Type.Optional(Nullable(Type.Boolean({ description: 'Flat form: true when absent or null.' }))),
    backend_id: Type.Optional(Nullable(Type.String({ description: 'Flat form: the tunnel group (required in that form).' }))),
  },
  { additionalProperties: false },
);

export const BackendModuleResponse = Type.Object(
  {
    enabled: Type.Boolean(),
    backend: Ref,
  },
  { $id: 'EndpointBackend' },
);

export const BackendModuleRef = Type.Unsafe<Static<typeof BackendModuleResponse>>(Type.Ref('EndpointBackend'));

export const TrafficPolicyModuleResponse = Type.Object(
  {
    enabled: Type.Boolean(),
    value: Type.String(),
  },
  { $id: 'TrafficPolicyModule' },
);

export const TrafficPolicyModuleRef = Type.Unsafe<Static<typeof TrafficPolicyModuleResponse>>(Type.Ref('TrafficPolicyModule'));

/** Field order of SPEC §7.1; empty description and metadata are left out. */
export const TlsEdgeResponse = Type.Object(
  {
    id: Type.String(),
    uri: Type.String(),
    created_at: Type.String(),
    description: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.String()),
    hostports: Type.Array(Type.String()),
    backend: Type.Union([BackendModuleRef, Type.Null()]),
    ip_restriction: Type.Null(),
    mutual_tls: Type.Null(),
    tls_termination: Type.Union([TlsTerminationModuleRef, Type.Null()]),
    traffic_policy: Type.Union([TrafficPolicyModuleRef, Type.Null()]),
    policy: Type.Null(),
  },
  { $id: 'TLSEdge' },
);

export const TlsEdgeRef = Type.Unsafe<Static<typeof TlsEdgeResponse>>(Type.Ref('TLSEdge'));

export const TlsEdgeListResponse = ListPage('tls_edges', TlsEdgeRef);
