/**
 * The variables of each phase (HTTP-POLICY.md §1), as the object schemas cel-js type-checks
 * against: `conn.geo.country_code` checks as string. The activations (activation.ts,
 * http-activation.ts) are built from the same tables, and a test walks both, so a name that
 * validates always has a value at run time. Names and types follow the reference's variable
 * pages; where a name is both a value and an object there (`req.url`), docs/DECISIONS.md says
 * which one burrow serves.
 */

/** A variable's CEL type, or an object of them. */
export type VariableSchema = string | { readonly [field: string]: VariableSchema };
export type VariableTable = { readonly [name: string]: VariableSchema };

// cel-js names a timestamp field by its protobuf name; a bare 'timestamp' here would be an unknown message type.
export const TIMESTAMP = 'google.protobuf.Timestamp';

/** A distinguished name's fields, as the reference's `conn.tls.client.subject.*` (the whole name as text is not served: see docs/DECISIONS.md). */
const NAME_FIELDS = {
  common_name: 'string',
  country: 'list<string>',
  locality: 'list<string>',
  organization: 'list<string>',
  organizational_unit: 'list<string>',
  postal_code: 'list<string>',
  province: 'list<string>',
  street_address: 'list<string>',
} as const;

const CERTIFICATE = {
  extensions: 'list<map<string, dyn>>',
  issuer: NAME_FIELDS,
  subject: NAME_FIELDS,
  san: { dns_names: 'list<string>', email_addresses: 'list<string>', ip_addresses: 'list<string>', uris: 'list<string>' },
  serial_number: 'string',
  signature_algorithm: 'string',
  validity: { not_after: TIMESTAMP, not_before: TIMESTAMP },
} as const;

/** The reference's connection TLS variables: filled where burrow terminates TLS (empty elsewhere). */
const TLS = {
  cipher_suite: 'string',
  ja4_fingerprint: 'string',
  negotiated_alpn: 'string',
  session_resumed: 'bool',
  sni: 'string',
  version: 'string',
  client: { ...CERTIFICATE, pem: 'string' },
  server: CERTIFICATE,
} as const;

const CONN = {
  client_ip: 'string',
  client_port: 'int',
  server_ip: 'string',
  server_port: 'int',
  server_region: 'string',
  ts: { start: TIMESTAMP },
  geo: {
    city: 'string',
    country: 'string',
    country_code: 'string',
    latitude: 'string',
    longitude: 'string',
    radius: 'string',
    subdivision: 'string',
  },
  tls: TLS,
} as const;

const ENDPOINT = { addr: 'string', host: 'string', id: 'string', url: 'string', protocol: 'string', port: 'int' } as const;
const TIME = { now: 'string' } as const;
const ERROR = { code: 'string', message: 'string' } as const;
const LOG = { metadata: 'map<string, dyn>' } as const;
const RESTRICT_IPS = { action: 'string', matched_cidr: 'string', error: ERROR } as const;
const HEADERS = 'map<string, list<string>>';

export const TCP_VARIABLES = {
  conn: CONN,
  endpoint: ENDPOINT,
  time: TIME,
  /** What set-vars set, for the rest of the connection. */
  vars: 'map<string, dyn>',
  actions: { ngrok: { log: LOG, restrict_ips: RESTRICT_IPS } },
} as const;

const REQ = {
  content_encoding: 'list<string>',
  content_length: 'int',
  content_type: 'string',
  cookies: 'map<string, list<map<string, string>>>',
  headers: HEADERS,
  host: 'string',
  location: 'string',
  method: 'string',
  trailers: HEADERS,
  ts: { header_received: TIMESTAMP },
  url: {
    authority: 'string',
    host: 'string',
    path: 'string',
    port: 'int',
    query: 'string',
    query_params: HEADERS,
    raw: 'string',
    raw_path: 'string',
    scheme: 'string',
  },
  user_agent: 'string',
  version: 'string',
} as const;

const RES = {
  content_encoding: 'list<string>',
  content_length: 'int',
  content_type: 'string',
  headers: HEADERS,
  location: 'string',
  status_code: 'int',
  trailers: HEADERS,
} as const;

/** Results of the HTTP actions (the reference's "Action Result Variables"), for the rules after them. */
const HTTP_ACTION_RESULTS = {
  log: LOG,
  restrict_ips: RESTRICT_IPS,
  add_headers: { headers_added: 'map<string, string>' },
  remove_headers: { headers_removed: 'list<string>' },
  basic_auth: { authorized: 'bool', credentials: { presented: 'bool', username: 'string' }, error: ERROR },
  rate_limit: { bucket_key: 'string', limited: 'bool', error: ERROR },
  redirect: { url: 'string' },
  url_rewrite: { url: 'string' },
  custom_response: { status_code: 'int' },
  compress: { already_compressed: 'bool', negotiated_algorithm: 'string' },
  verify_webhook: { verified: 'bool', provider: 'string', error: ERROR },
  jwt_validation: { tokens: 'list<map<string, dyn>>', error: ERROR },
  oauth: loginResults('current_provider_session_id', 'userinfo_refreshed'),
  // user_info_refreshed: the name burrow first served, kept beside the reference's
  oidc: { ...loginResults('current_session_id', 'userinfo_refreshed'), user_info_refreshed: 'bool', identity_token: 'string' },
} as const;

/** The reference's result variables of oauth and openid-connect, which differ in two names. */
function loginResults<S extends string, R extends string>(sessionField: S, refreshedField: R) {
  return {
    error: ERROR,
    identity: { id: 'string', email: 'string', name: 'string', provider_user_id: 'string', [sessionField]: 'string' } as { id: 'string'; email: 'string'; name: 'string'; provider_user_id: 'string' } & { [K in S]: 'string' },
    access_token: 'string',
    refresh_token: 'string',
    expires_at: 'string',
    session_timed_out: 'bool',
    session_max_duration_reached: 'bool',
    [refreshedField]: 'bool',
  } as { error: typeof ERROR; identity: { [K in 'id' | 'email' | 'name' | 'provider_user_id' | S]: 'string' }; access_token: 'string'; refresh_token: 'string'; expires_at: 'string'; session_timed_out: 'bool'; session_max_duration_reached: 'bool' } & { [K in R]: 'bool' };
}

export const HTTP_REQUEST_VARIABLES = {
  conn: CONN,
  endpoint: ENDPOINT,
  time: TIME,
  req: REQ,
  vars: 'map<string, dyn>',
  actions: { ngrok: HTTP_ACTION_RESULTS },
} as const;

export const HTTP_RESPONSE_VARIABLES = { ...HTTP_REQUEST_VARIABLES, res: RES } as const;
