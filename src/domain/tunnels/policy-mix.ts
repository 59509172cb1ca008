// How the policies of a pool's tunnels differ, which decides when a public connection's tunnel is
// picked (the reference's endpoint pooling, "Heterogeneous endpoints" and "Granularity").
import type { ConnectionPolicy } from './connection-policy.js';

/**
 * - `same`: every tunnel runs one policy: it runs first, the tunnel is picked when the stream opens.
 * - `per-request`: the policies differ in their HTTP phases only: each HTTP request picks its
 *   tunnel, then runs that tunnel's policy (a TCP or TLS connection picks per connection).
 * - `per-connection`: the connection-level parts differ (IP restriction, on_tcp_connect, edge TLS):
 *   each connection picks its tunnel first and keeps it, for every request it makes.
 */
export type PolicyMix = 'same' | 'per-request' | 'per-connection';

/** Keys are computed once per compiled policy: a pool compares them only when it changes. */
const wholeKeys = new WeakMap<ConnectionPolicy, string>();
const connectionKeys = new WeakMap<ConnectionPolicy, string>();

export function policyMix(policies: Iterable<ConnectionPolicy>): PolicyMix {
  let whole: string | undefined;
  let connection: string | undefined;
  let mix: PolicyMix = 'same';
  for (const policy of policies) {
    const wholeKey = keyOf(wholeKeys, policy, wholeKeyOf);
    const connectionKey = keyOf(connectionKeys, policy, connectionKeyOf);
    if (whole === undefined) {
      whole = wholeKey;
      connection = connectionKey;
    } else if (connectionKey !== connection) return 'per-connection';
    else if (wholeKey !== whole) mix = 'per-request';
  }
  return mix;
}

function keyOf(keys: WeakMap<ConnectionPolicy, string>, policy: ConnectionPolicy, make: (policy: ConnectionPolicy) => string): string {
  let key = keys.get(policy);
  if (key === undefined) keys.set(policy, (key = make(policy)));
  return key;
}

/** The validated rules of each part (not their text: the same rules in YAML or JSON are one policy). */
function wholeKeyOf(policy: ConnectionPolicy): string {
  return JSON.stringify([keyOf(connectionKeys, policy, connectionKeyOf), policy.options?.policy.phases ?? null, policy.policy?.policy.phases ?? null]);
}

/** What a connection meets before any request: the IP restriction, on_tcp_connect and the edge's TLS. */
function connectionKeyOf(policy: ConnectionPolicy): string {
  const edgeTls = policy.edgeTls;
  return JSON.stringify([
    policy.ipRestriction?.policy.rules ?? [],
    policy.policy?.policy.rules ?? [],
    edgeTls === undefined ? null : [edgeTls.clientCas ?? null, edgeTls.certificate?.cert ?? null],
  ]);
}
