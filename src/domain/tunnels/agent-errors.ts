/**
 * The errors an agent is shown (AGENT-PROTOCOL.md §7): a numbered code and the reference
 * service's message. The protocol layer formats them as "<message>\n\nERR_NGROK_<n>"; the
 * texts follow ngrok's published error pages, with the placeholders filled in.
 */
export class AgentRefusal extends Error {
  constructor(
    /** The number of ERR_NGROK_<n>. */
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'AgentRefusal';
  }

  get errorCode(): string {
    return `ERR_NGROK_${this.code}`;
  }
}

/** At most the first 8 characters of a token ever appear in a message (TUNNELS.md §2). */
function tokenPrefix(token: string): string {
  return token.slice(0, Math.min(8, Math.floor(token.length / 2)));
}

export const agentErrors = {
  malformedToken: (token: string) =>
    new AgentRefusal(105, `The authtoken you specified does not look like a proper ngrok authtoken.\nYour authtoken: ${tokenPrefix(token)}…`),
  invalidToken: (token: string) =>
    new AgentRefusal(107, `The authtoken you specified is properly formed, but it is invalid.\nYour authtoken: ${tokenPrefix(token)}…`),
  tooManySessions: (max: number) => new AgentRefusal(108, `Your account is limited to ${max} simultaneous ngrok agent sessions.`),
  badAuthPayload: (why: string) =>
    new AgentRefusal(109, `The authentication payload you specified is not valid.\n${why}`),
  badBindPayload: (why: string) => new AgentRefusal(301, `The bind payload you specified is not valid.\n${why}`),
  addressNotReserved: (address: string, accountId: string, region: string) =>
    new AgentRefusal(
      307,
      `You must reserve an address for your account before it can be used.\nFailed to create the address ${address} for the account ${accountId} in region ${region}.\n(Hint: burrow serves TCP addresses on its EDGE_PUBLIC_HOST, ports of EDGE_TCP_PORTS.)`,
    ),
  addressNotPermitted: (credentialId: string, address: string) =>
    new AgentRefusal(308, `The credential ACL policy does not permit binding this address.\nCredential ID: ${credentialId}\nAddress: ${address}`),
  addressTaken: (address: string, accountId: string) =>
    new AgentRefusal(
      309,
      `This address is reserved for another account.\nFailed to create an endpoint with the address ${address} for the account ${accountId}.`,
    ),
  nameNotPermitted: (credentialId: string, name: string) =>
    new AgentRefusal(316, `The credential ACL policy does not permit binding this name.\nCredential ID: ${credentialId}\nName: ${name}`),
  nameNotReserved: (domain: string, accountId: string) =>
    new AgentRefusal(
      319,
      `You must reserve a custom hostname for your account before it can be used to create endpoints.\nFailed to create an endpoint with the domain ${domain} for the account ${accountId}.\n(Hint: this burrow server requires reservations (REQUIRE_RESERVED_NAMES): reserve it with POST /reserved_domains.)`,
    ),
  domainTaken: (domain: string, accountId: string) =>
    new AgentRefusal(
      320,
      `This domain is reserved for another account.\nFailed to create an endpoint with the domain ${domain} for the account ${accountId}.`,
    ),
  tooManyEndpoints: (max: number) =>
    new AgentRefusal(324, `Your account may not run more than ${max} endpoints over a single ngrok agent session.`),
  invalidDomain: (domain: string, why: string) =>
    new AgentRefusal(326, `${why}\nFailed to create an endpoint with the domain ${JSON.stringify(domain.slice(0, 253))}.`),
  alreadyOnline: (url: string) =>
    new AgentRefusal(
      334,
      `The endpoint ${url} is already online. Either\n1. stop your existing endpoint first, or\n2. start both endpoints with \`--pooling-enabled\` to load balance between them.`,
    ),
  randomAddressNotPermitted: (credentialId: string) =>
    new AgentRefusal(356, `The credential ACL policy does not permit binding random TCP addresses.\nCredential ID: ${credentialId}`),
  labelNotPermitted: (credentialId: string, label: string) =>
    new AgentRefusal(399, `The credential ACL policy does not permit binding this label.\nCredential ID: ${credentialId}\nLabel: ${label}`),
  addressInUse: (address: string) =>
    new AgentRefusal(
      307,
      `The address ${address} is not available: its port is in use by another program on the burrow server.\n(Hint: bind another port of EDGE_TCP_PORTS, or leave the address out for a free one.)`,
    ),
  noFreeAddress: () =>
    new AgentRefusal(307, 'No TCP address is free: every port of EDGE_TCP_PORTS is in use.'),
  unservedOption: (option: string, proto: string, why?: string) =>
    new AgentRefusal(
      301,
      `The bind payload you specified is not valid.\nThe endpoint option ${option} is not served by this burrow server for ${proto} endpoints${why ? ` (${why})` : ''}; remove it from the agent's configuration.`,
    ),
  credentialRevoked: (credentialId: string) =>
    new AgentRefusal(300, `The authtoken credential ${credentialId} has been revoked\nand is no longer valid.`),
  // ngrok documents no code for a protocol a server does not serve at all: the text stands alone.
  protoNotServed: (proto: string, setting: string) =>
    new AgentRefusal(0, `This burrow server serves no ${proto} endpoints (${setting}): its public listener for them is off. Connect to a server that has it on.`),
  sniTaken: (url: string, rival: string) =>
    new AgentRefusal(
      334,
      `The endpoint ${rival} is already online and takes every TLS connection for its name on that port, so ${url} could never be reached. Stop ${rival} first, or use another name.`,
    ),
  // PatchTunnelState refusals: ngrok documents no codes for them, so the text stands alone.
  unknownTunnel: (tunnelId: string) => new AgentRefusal(0, `This session has no tunnel ${JSON.stringify(tunnelId.slice(0, 64))}.`),
  poolingFixed: (current: boolean) =>
    new AgentRefusal(0, `PoolingEnabled cannot change while the endpoint is online (it is ${current}); stop the endpoint and start it again with the new setting.`),
  labeledPolicy: () => new AgentRefusal(0, 'A labeled tunnel takes no traffic policy: the traffic policy module of its edge applies.'),
  shuttingDown: () => new AgentRefusal(109, 'This burrow server is shutting down; reconnect to another one.'),
  // ngrok documents no code for failed logins; 717 is its connection rate limit of unauthenticated sessions
  tooManyFailedAuths: (waitSeconds: number) =>
    new AgentRefusal(
      717,
      `This unauthenticated ngrok session has reached its connection rate limit.\nToo many failed authentications from your address: try again in ${waitSeconds} s.`,
    ),
} as const;
