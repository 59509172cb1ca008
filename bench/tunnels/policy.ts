/**
 * The policy scenario's traffic policy: 25 on_tcp_connect rules whose expressions all hold for a
 * loopback client, so every rule's actions run, and restrict-ips CIDR lists of 1,000 entries
 * where the one that allows 127.0.0.0/8 is last. A policy is at most 64 KiB (SPEC §7.3), so only
 * a few lists can be that long: as many as fit; the other rules carry short lists and log actions.
 */
export const POLICY_RULES = 25;
const LONG_LIST = 1000;
const MAX_BYTES = 65536;

function longList(seed: number): string[] {
  const list = Array.from({ length: LONG_LIST - 1 }, (_, i) => `10.${seed}.${i >> 4}.${(i & 15) << 4}/28`);
  list.push('127.0.0.0/8');
  return list;
}

function rule(index: number, long: boolean): Record<string, unknown> {
  const expressions = index % 2 === 0 ? ["inCidrRange(conn.client_ip, '127.0.0.0/8')"] : ['conn.server_port > 0 && conn.client_port > 0'];
  const allow = long ? longList(index) : [`192.0.2.${index}/32`, '127.0.0.0/8'];
  const actions: unknown[] = [{ type: 'restrict-ips', config: { allow, deny: [`198.51.100.${index}/32`] } }];
  if (!long && index % 5 === 0) actions.push({ type: 'log', config: { metadata: { rule: index, client: '${conn.client_ip}:${conn.client_port}' } } });
  return { name: `bench rule ${index}`, expressions, actions };
}

/** The document (compact JSON) and how many of its rules carry a 1,000-entry list. */
export function benchPolicy(): { document: string; longLists: number; bytes: number } {
  for (let longLists = POLICY_RULES; longLists >= 0; longLists--) {
    const rules = Array.from({ length: POLICY_RULES }, (_, i) => rule(i + 1, i < longLists));
    const document = JSON.stringify({ on_tcp_connect: rules });
    const bytes = Buffer.byteLength(document);
    if (bytes <= MAX_BYTES) return { document, longLists, bytes };
  }
  throw new Error('unreachable: a policy without long lists fits');
}

/**
 * The http-policy scenario's traffic policy (issue 24): ten on_http_request rules that all run
 * for the bench's GET (add-headers, remove-headers, basic-auth, a rate-limit no load reaches,
 * a regex expression), so the figure is the engine's cost per request with nothing refused.
 */
export const HTTP_POLICY_RULES = 10;
export const BENCH_BASIC_AUTH = { user: 'bench', password: 'bench-password' };
/** What every request of the scenario carries, through both endpoints alike. */
export const HTTP_POLICY_HEADERS = {
  authorization: `Basic ${Buffer.from(`${BENCH_BASIC_AUTH.user}:${BENCH_BASIC_AUTH.password}`).toString('base64')}`,
  'x-bench-tier': 'gold',
};

export function benchHttpPolicy(): string {
  const rules: Record<string, unknown>[] = [
    { name: 'regex on the path', expressions: ["req.url.path.matches('^/[a-z0-9]*$')"], actions: [{ type: 'add-headers', config: { headers: { 'x-path-ok': 'yes' } } }] },
    { name: 'basic auth', actions: [{ type: 'basic-auth', config: { realm: 'bench', credentials: [`${BENCH_BASIC_AUTH.user}:${BENCH_BASIC_AUTH.password}`] } }] },
    { name: 'rate limit', actions: [{ type: 'rate-limit', config: { name: 'bench', algorithm: 'sliding_window', capacity: 1_000_000_000, rate: '60s', bucket_key: ['${conn.client_ip}'] } }] },
    { name: 'drop the tier header', expressions: ["'x-bench-tier' in req.headers"], actions: [{ type: 'remove-headers', config: { headers: ['x-bench-tier'] } }] },
    { name: 'method', expressions: ["req.method == 'GET'"], actions: [{ type: 'add-headers', config: { headers: { 'x-method': '${req.method}' } } }] },
  ];
  for (let i = rules.length + 1; i <= HTTP_POLICY_RULES; i++) {
    rules.push({ name: `header ${i}`, expressions: ['conn.client_port > 0'], actions: [{ type: i % 2 === 0 ? 'add-headers' : 'remove-headers', config: i % 2 === 0 ? { headers: { [`x-bench-${i}`]: '${conn.client_ip}' } } : { headers: [`x-absent-${i}`] } }] });
  }
  return JSON.stringify({ on_http_request: rules });
}
