/**
 * Errors as the agent shows them (AGENT-PROTOCOL.md §7): the `Error` text of a response is
 * message lines, a blank line, then `ERR_NGROK_<n>` on its own line. RS (proto.rs `ErrResp`)
 * takes every non-empty line starting with `ERR_NGROK_` as the code and joins the others as
 * the message; GO (msg.go `ngrokError`) matches `(ERR_NGROK_\d+)` anywhere.
 */

export class AgentError extends Error {
  /** ngrok error number (`308` for ERR_NGROK_308); 0 = no code (the text is the message alone). */
  readonly code: number;

  constructor(code: number, message: string) {
    super(message);
    this.name = 'AgentError';
    this.code = code;
  }

  /** `"ERR_NGROK_308"`, or `""` without a code. */
  get errorCode(): string {
    return errorCodeString(this.code);
  }

  /** The `Error` text of the response. */
  format(): string {
    return formatAgentError(this.code, this.message);
  }
}

export function errorCodeString(code: number): string {
  return code > 0 ? `ERR_NGROK_${code}` : '';
}

/** `"<message>\n\nERR_NGROK_<n>"`; just the message when code is 0. */
export function formatAgentError(code: number, message: string): string {
  // A line of the message that itself starts with ERR_NGROK_ would be read as the code by RS.
  const safe = message
    .split('\n')
    .map((l) => (l.startsWith('ERR_NGROK_') ? ` ${l}` : l))
    .join('\n');
  return code > 0 ? `${safe}\n\nERR_NGROK_${code}` : safe;
}

/** Reads an agent error text back (the RS rule): code from `ERR_NGROK_` lines, the rest joined. */
export function parseAgentError(text: string): { code: number; message: string } {
  let code = 0;
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^ERR_NGROK_(\d+)\s*$/.exec(line);
    if (m) code = Number(m[1]);
    else lines.push(line);
  }
  return { code, message: lines.join('\n') };
}

/**
 * The agent-facing messages burrow sends (texts after ngrok's error docs). Arguments fill the
 * parts that vary. Codes not listed (e.g. 2230-ish traffic-policy errors) come from elsewhere:
 * build them with `new AgentError(code, message)`.
 */
export const AgentErrors = {
  /** 105: the token is not of the authtoken form. `prefix` = at most its first 8 characters. */
  malformedAuthtoken: (prefix?: string): AgentError =>
    new AgentError(
      105,
      'The authtoken you specified does not look like a proper ngrok authtoken.' +
        (prefix ? `\nYour authtoken: ${prefix}` : ''),
    ),
  /** 107: well-formed but unknown, deleted or revoked. */
  invalidAuthtoken: (prefix?: string): AgentError =>
    new AgentError(
      107,
      'The authtoken you specified is properly formed, but it is invalid.' +
        (prefix ? `\nYour authtoken: ${prefix}` : '') +
        '\nThis usually happens when:\n    - You reset your authtoken\n    - Your authtoken was for a team account that you were removed from\n    - You are using ngrok link and this credential was explicitly revoked',
    ),
  /** 108: more simultaneous sessions than the account may hold. */
  tooManySessions: (limit: number): AgentError =>
    new AgentError(108, `Your account is limited to ${limit} simultaneous ngrok agent sessions.`),
  /** 109: the Auth payload could not be understood. */
  invalidAuthPayload: (detail?: string): AgentError =>
    new AgentError(
      109,
      'The authentication payload you specified is not valid.' + (detail ? `\n${detail}` : ''),
    ),
  /** 307: the TCP address is not reserved (not one this service can give). */
  tcpAddressNotReserved: (addr: string): AgentError =>
    new AgentError(
      307,
      `You must reserve an address for your account before it can be used.\nFailed to create the address ${addr}: it is not an address this service gives out.`,
    ),
  /** 308: the credential's ACL does not permit this address. */
  aclAddressNotPermitted: (credentialId: string, addr: string): AgentError =>
    new AgentError(
      308,
      `The credential ACL policy does not permit binding this address.\nCredential: ${credentialId}\nAddress: ${addr}`,
    ),
  /** 309: the TCP address is reserved for another account. */
  tcpAddressReservedElsewhere: (addr: string): AgentError =>
    new AgentError(
      309,
      `This address is reserved for another account.\nFailed to create an endpoint with the address ${addr}.`,
    ),
  /** 316: the credential's ACL does not permit this hostname. */
  aclNameNotPermitted: (credentialId: string, name: string): AgentError =>
    new AgentError(
      316,
      `The credential ACL policy does not permit binding this name.\nCredential: ${credentialId}\nName: ${name}`,
    ),
  /** 319: the hostname is not reserved for the account. */
  hostnameNotReserved: (name: string): AgentError =>
    new AgentError(319, `The domain ${name} is not reserved for your account.`),
  /** 320: the hostname is reserved (bound) by another account. */
  hostnameReservedElsewhere: (name: string): AgentError =>
    new AgentError(
      320,
      `This domain is reserved for another account.\nFailed to create an endpoint with the domain ${name}.`,
    ),
  /** 324: too many endpoints / tunnels on one session. */
  tooManyEndpoints: (limit: number, running: readonly string[] = []): AgentError =>
    new AgentError(
      324,
      `Your account may not run more than ${limit} endpoints over a single ngrok agent session.` +
        (running.length > 0 ? `\nThe endpoints already running on this session are:\n${running.join(', ')}.` : ''),
    ),
  /** 334: the endpoint URL is already online (and pooling is not enabled on both binds). */
  endpointAlreadyOnline: (url: string): AgentError =>
    new AgentError(
      334,
      `The endpoint ${url} is already online. Either\n1. stop your existing endpoint first, or\n2. start both endpoints with \`--pooling-enabled\` to load balance between them.`,
    ),
  /** 356: random TCP addresses are not permitted by the ACL. */
  aclRandomTcpNotPermitted: (credentialId: string): AgentError =>
    new AgentError(
      356,
      `The credential ACL policy does not permit binding random TCP addresses.\nCredential: ${credentialId}`,
    ),
  /** 399: a label is not permitted by the ACL. */
  aclLabelNotPermitted: (credentialId: string, label: string): AgentError =>
    new AgentError(
      399,
      `The credential ACL policy does not permit binding this label.\nCredential: ${credentialId}\nLabel: ${label}`,
    ),
  /** 811: no protocol version in common. */
  unsupportedVersion: (requested: readonly string[], supported: readonly string[]): AgentError =>
    new AgentError(
      811,
      `Could not negotiate a protocol version. Requested: "${requested.join(', ')}", Supported: "${supported.join(', ')}"`,
    ),
  /** 813: a message that the negotiated protocol version does not have. */
  unsupportedMessage: (message: string, version: string): AgentError =>
    new AgentError(813, `Your message "${message}" is not supported by this version of the protocol: ${version}.`),
} as const;
