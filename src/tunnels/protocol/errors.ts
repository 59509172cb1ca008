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
 * The protocol's own refusals (a payload it cannot read, a message or version it does not
 * serve). What a bind or an Auth is refused for by burrow's rules is the domain's
 * (src/domain/tunnels/agent-errors.ts), turned into an AgentError by the caller.
 */
export const AgentErrors = {
  /** 109: the Auth payload could not be understood. */
  invalidAuthPayload: (detail?: string): AgentError =>
    new AgentError(109, 'The authentication payload you specified is not valid.' + (detail ? `\n${detail}` : '')),
  /** 301: a Bind or StartTunnelWithLabel payload that could not be understood. */
  invalidBindPayload: (detail: string): AgentError => new AgentError(301, `The bind payload you specified is not valid.\n${detail}`),
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
