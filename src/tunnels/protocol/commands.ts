/**
 * Server → agent commands (AGENT-PROTOCOL.md §5): Restart (4) `{}`, Stop (5) `{}`,
 * Update (6) `{Version, PermitMajorVersion}`, StopTunnel (9) `{Id, Message, ErrorCode}`.
 *
 * The server opens the stream, writes type + JSON in one write and half-closes (it has nothing
 * more to say; both agents read one JSON value without waiting for FIN: RS `read_req` parses
 * after every read, GO uses a json.Decoder). Replies differ: RS writes `{}` or `{"Error":…}`
 * then FIN; GO writes `{"Error":""}` without FIN, or nothing when the app has no handler;
 * StopTunnel gets no reply, only FIN. Hence a timeout, and a reset of the stream when the
 * agent leaves it open.
 */
import { decodeCommandResp, encodeStopTunnel, encodeUpdate, type StopTunnelCommand, type UpdateCommand } from './command-messages.js';
import type { JsonObject } from './json-fields.js';
import { MuxErrorCode, type ProtocolStream, type StreamSession } from './stream-session.js';
import { StreamReader, StreamReadError } from './stream-reader.js';
import { StreamType, encodeStreamType } from './stream-types.js';

export type CommandKind = 'restart' | 'stop' | 'update';

export type CommandOutcome =
  /** The agent answered without an error. */
  | { status: 'ok' }
  /** The agent answered with this `Error` text. */
  | { status: 'error'; error: string }
  /**
   * No JSON answer: `eof` = the agent half-closed without one (StopTunnel's normal answer),
   * `timeout` = silence, `closed` = the stream or session died, `invalid` = not a JSON object.
   */
  | { status: 'no-reply'; reason: 'eof' | 'timeout' | 'closed' | 'invalid' };

export interface CommandOptions {
  /** How long to wait for the reply. Default 5 000 ms. */
  timeoutMs?: number;
  /** Largest reply accepted. Default 64 KiB. */
  maxReplyBytes?: number;
}

/** Opens a typed stream, writes `type + JSON` in one write then FIN, and awaits the reply. */
export async function sendTypedCommand(
  session: StreamSession,
  type: number,
  body: JsonObject,
  opts: CommandOptions = {},
): Promise<CommandOutcome> {
  const stream: ProtocolStream = session.open();
  stream.on('error', () => {});
  const reader = new StreamReader(stream);
  stream.end(Buffer.concat([encodeStreamType(type), Buffer.from(JSON.stringify(body), 'utf8')]));
  let outcome: CommandOutcome;
  try {
    const { value } = await reader.readJson({
      maxBytes: opts.maxReplyBytes ?? 64 * 1024,
      timeoutMs: opts.timeoutMs ?? 5_000,
    });
    let error: string;
    try {
      error = decodeCommandResp(value);
    } catch {
      outcome = { status: 'no-reply', reason: 'invalid' };
      return outcome;
    }
    outcome = error === '' ? { status: 'ok' } : { status: 'error', error };
  } catch (err) {
    const kind = err instanceof StreamReadError ? err.kind : 'closed';
    outcome = {
      status: 'no-reply',
      reason: kind === 'eof' || kind === 'timeout' || kind === 'closed' ? kind : 'invalid',
    };
  } finally {
    // RS FINs after its reply, GO leaves the stream open: wait a little for the FIN in the
    // background, then free the stream with RST.
    void closeQuietly(stream, reader);
  }
  return outcome;
}

async function closeQuietly(stream: ProtocolStream, reader: StreamReader): Promise<void> {
  let ended = false;
  try {
    ended = await reader.drain(64 * 1024, Date.now() + 1_000);
  } catch {
    ended = false;
  }
  if (!ended && !stream.destroyed) stream.reset(MuxErrorCode.StreamCancelled);
}

const COMMAND_TYPE: Record<CommandKind, number> = {
  restart: StreamType.Restart,
  stop: StreamType.Stop,
  update: StreamType.Update,
};

/** Restart / Stop (`{}`) or Update (`{Version, PermitMajorVersion}`). */
export function sendCommand(
  session: StreamSession,
  kind: CommandKind,
  update: UpdateCommand = { version: '', permitMajorVersion: false },
  opts?: CommandOptions,
): Promise<CommandOutcome> {
  const body = kind === 'update' ? encodeUpdate(update) : {};
  return sendTypedCommand(session, COMMAND_TYPE[kind], body, opts);
}

/**
 * StopTunnel (9): only for agents that negotiated protocol "3" (the caller checks). The agent
 * answers nothing and FINs: `{status:'no-reply', reason:'eof'}` is success.
 */
export function sendStopTunnel(session: StreamSession, cmd: StopTunnelCommand, opts?: CommandOptions): Promise<CommandOutcome> {
  return sendTypedCommand(session, StreamType.StopTunnel, encodeStopTunnel(cmd), opts);
}
