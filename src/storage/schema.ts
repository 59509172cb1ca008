import type { Generated } from 'kysely';

/**
 * Table shapes as Kysely sees them. Booleans are stored as 0/1 integers and JSON lists as text
 * on both dialects, so rows read the same from SQLite and PostgreSQL.
 */
export interface AccountsTable {
  id: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
}

export interface PrincipalsTable {
  id: string;
  account_id: string;
  kind: 'user' | 'bot';
  name: string;
  admin: number;
  created_at: string;
  revoked_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  owner_id: string;
  description: string;
  secret_hash: string;
  display_prefix: string;
  created_at: string;
  revoked_at: string | null;
  /** Added by 006_console: the /api_keys resource's metadata. */
  metadata: Generated<string>;
}

export interface TrafficInspectionSettingsTable {
  account_id: string;
  capture: string;
  body_limit_bytes: number;
  redact_secrets: number;
}

export interface InspectedRequestsTable {
  id: string;
  account_id: string;
  endpoint_id: string;
  /** JSON of the captured exchange. */
  exchange: string;
  created_at: string;
}

export interface ConsoleSessionsTable {
  id_hash: string;
  api_key_id: string;
  csrf_token: string;
  created_at: string;
  last_used_ms: number | string;
}

export interface CredentialsTable {
  id: string;
  account_id: string;
  owner_id: string;
  description: string;
  metadata: string;
  /** JSON array of strings. */
  acl: string;
  token_hash: string;
  created_at: string;
}

export interface TlsEdgesTable {
  id: string;
  account_id: string;
  description: string;
  metadata: string;
  /** JSON array of strings. */
  hostports: string;
  /** 0/1 when a traffic policy module is attached, else null (as is policy_value). */
  policy_enabled: number | null;
  policy_value: string | null;
  /** 0/1 when a backend module is attached, else null (as is backend_id). */
  backend_enabled: number | null;
  /** The tunnel group of the backend module (foreign key). */
  backend_id: string | null;
  /** 0/1 when a tls_termination module is attached, else null (as are the two below). */
  termination_enabled: number | null;
  /** `edge` or `upstream`. */
  termination_at: string | null;
  /** `1.0`…`1.3`, or '' for burrow's default; null without a module. */
  termination_min_version: string | null;
  created_at: string;
}

export interface TunnelGroupBackendsTable {
  id: string;
  account_id: string;
  description: string;
  metadata: string;
  /** JSON object of labels, keys sorted. */
  labels: string;
  created_at: string;
}

export interface ReservedDomainsTable {
  id: string;
  account_id: string;
  domain: string;
  region: string;
  description: string;
  metadata: string;
  /** JSON {authority, private_key_type, set_at}, or null. */
  certificate_policy: string | null;
  created_at: string;
}

export interface ReservedAddrsTable {
  id: string;
  account_id: string;
  port: number;
  region: string;
  description: string;
  metadata: string;
  created_at: string;
}

export interface TrafficMinutesTable {
  /** Unix seconds at the start of the minute. */
  minute: number | string;
  instance_id: string;
  series: string;
  value: number | string;
}

export interface RateLimitCountsTable {
  account_id: string;
  /** Unix second of the bucket. */
  second: number | string;
  count: number | string;
}

export interface BootstrapTable {
  id: number;
  account_id: string;
  created_at: string;
}

export interface InstancesTable {
  id: string;
  started_at: string;
  last_seen_at: number | string;
  cluster_addr: string | null;
}

export interface ClusterCaTable {
  id: number;
  cert_pem: string;
  sealed_key: string;
  created_at: string;
}

export interface TunnelSessionsTable {
  id: string;
  account_id: string;
  credential_id: string;
  instance_id: string;
  ip: string;
  metadata: string;
  os: string;
  agent_version: string;
  region: string;
  started_at: string;
  stop_unsupported: string | null;
  restart_unsupported: string | null;
  update_unsupported: string | null;
}

export interface TunnelsTable {
  id: string;
  account_id: string;
  session_id: string;
  instance_id: string;
  proto: string;
  public_url: string | null;
  /** JSON object, or null when the tunnel is not labeled. */
  labels: string | null;
  forwards_to: string;
  metadata: string;
  endpoint_id: string | null;
  started_at: string;
}

export interface EndpointsTable {
  id: string;
  account_id: string;
  instance_id: string;
  url: string;
  proto: string;
  host: string;
  port: number;
  session_id: string;
  principal_id: string;
  traffic_policy: string;
  pooling_enabled: number;
  created_at: string;
  updated_at: string;
  /** One more at each policy patch (migration 023): the routes' version with `updated_at`. */
  policy_version: Generated<number>;
}

export interface TunnelClaimsTable {
  key: string;
  account_id: string;
  instance_id: string;
  claimed_at: string;
}

export interface SessionCommandsTable {
  id: Generated<number>;
  instance_id: string;
  session_id: string;
  command: string;
  created_at: number | string;
}

export interface SchemaTables {
  accounts: AccountsTable;
  principals: PrincipalsTable;
  api_keys: ApiKeysTable;
  credentials: CredentialsTable;
  tls_edges: TlsEdgesTable;
  tunnel_group_backends: TunnelGroupBackendsTable;
  rate_limit_counts: RateLimitCountsTable;
  traffic_minutes: TrafficMinutesTable;
  bootstrap: BootstrapTable;
  instances: InstancesTable;
  cluster_ca: ClusterCaTable;
  tunnel_sessions: TunnelSessionsTable;
  tunnels: TunnelsTable;
  endpoints: EndpointsTable;
  tunnel_claims: TunnelClaimsTable;
  session_commands: SessionCommandsTable;
  reserved_domains: ReservedDomainsTable;
  reserved_addrs: ReservedAddrsTable;
  acme_accounts: AcmeAccountsTable;
  acme_certificates: AcmeCertificatesTable;
  acme_challenges: AcmeChallengesTable;
  console_sessions: ConsoleSessionsTable;
  traffic_inspection_settings: TrafficInspectionSettingsTable;
  inspected_requests: InspectedRequestsTable;
}

export interface AcmeAccountsTable {
  directory_url: string;
  key_sealed: string;
  account_url: string | null;
}

/** bigint columns come back as strings from pg. */
export interface AcmeCertificatesTable {
  name: string;
  cert_pem: string | null;
  key_sealed: string | null;
  not_after: number | string | null;
  order_at: number | string;
  failures: number;
  last_error: string | null;
  order_owner: string | null;
  order_until: number | string;
}

export interface AcmeChallengesTable {
  key: string;
  key_authorization: string;
  expires_at: number | string;
}
