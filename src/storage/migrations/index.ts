import type { Migration } from 'kysely';
import type { Dialect } from '../db.js';
import { initial } from './001_initial.js';
import { tlsEdges } from './002_tls_edges.js';
import { rateLimitCounts } from './003_rate_limit_counts.js';
import { tunnels } from './004_tunnels.js';
import { tunnelGroups } from './005_tunnel_groups.js';
import { consoleSessions } from './006_console.js';
import { reservedNames } from './010_reserved_names.js';
import { acme } from './012_acme.js';
import { cluster } from './013_cluster.js';
import { tlsTermination } from './016_tls_termination.js';
import { routeNotifications } from './018_route_notifications.js';
import { trafficMinutes } from './021_traffic_minutes.js';
import { sessionNotifications } from './022_session_notifications.js';
import { endpointPolicyVersion } from './023_endpoint_policy_version.js';

/** Every migration in order. Names are permanent: they are recorded in kysely_migration. */
export function allMigrations(dialect: Dialect): Record<string, Migration> {
  return {
    '001_initial': initial(dialect),
    '002_tls_edges': tlsEdges(dialect),
    '003_rate_limit_counts': rateLimitCounts(dialect),
    '004_tunnels': tunnels(dialect),
    '005_tunnel_groups': tunnelGroups(dialect),
    '006_console': consoleSessions(dialect),
    '010_reserved_names': reservedNames(dialect),
    '012_acme': acme(dialect),
    '013_cluster': cluster(dialect),
    '016_tls_termination': tlsTermination(dialect),
    '018_route_notifications': routeNotifications(dialect),
    '021_traffic_minutes': trafficMinutes(dialect),
    '022_session_notifications': sessionNotifications(dialect),
    '023_endpoint_policy_version': endpointPolicyVersion(dialect),
  };
}
