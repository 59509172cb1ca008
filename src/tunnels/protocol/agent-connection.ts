/**
 * One agent connection: reads the type of every agent-opened stream, echoes heartbeats,
 * decodes RPC requests and hands them to the caller's handlers, writes the replies; enforces
 * the session rules of TUNNELS.md §2 (Auth first, auth deadline); offers proxy streams and
 * server → agent commands. Knows nothing of the database or of burrow's domain.
 */
import { EventEmitter } from 'node:events';
import { AgentError, AgentErrors } from './errors.js';
import { sendCommand, sendStopTunnel, type CommandKind, type CommandOptions, type CommandOutcome } from './commands.js';
import { Heartbeater, MAX_AGENT_HEARTBEAT_STREAMS, echoHeartbeats, type HeartbeatFailure } from './heartbeat.js';
import type { AuthRequest, AuthResponse } from './auth-messages.js';
import type { BindRequest, BindResponse } from './bind-messages.js';
import type { UpdateCommand } from './command-messages.js';
import { MessageDecodeError, type JsonObject } from './json-fields.js';
import type { ProxyHeader } from './proxy.js';
import { RPC_REQUESTS, errorReply, type RpcServer } from './rpc-requests.js';
import type {
  PatchTunnelStateRequest,
  SrvInfoRequest,
  SrvInfoResponse,
  StartTunnelWithLabelRequest,
  StartTunnelWithLabelResponse,
  UnbindRequest,
} from './tunnel-messages.js';
import { openProxyStream } from './proxy.js';
import { MuxErrorCode, type ProtocolStream, type StreamSession } from './stream-session.js';
import { StreamReadError, StreamReader } from './stream-reader.js';
import { StreamType, streamTypeName } from './stream-types.js';

/**
 * Before a successful Auth an agent gets what Auth needs (TUNNELS.md §2): a few streams (Auth,
 * a heartbeat, requests that race the Auth reply) and an Auth body's worth of bytes plus slack;
 * past the bytes the connection is closed, so no unauthenticated peer makes us hold more.
 */
const PRE_AUTH_STREAMS = 16;
const PRE_AUTH_SLACK_BYTES = 1024 * 1024;

/**
 * Requests held until the first Auth is answered: the classic agent opens its Bind stream
 * without waiting for the Auth reply, and its frames can even arrive before the Auth's. A few
 * at most, for no longer than the auth deadline; one more closes the connection as before.
 */
export const MAX_HELD_BEFORE_AUTH = 4;

/** Protocol versions served, in the server's preference order. */
export const SUPPORTED_VERSIONS = ['3', '2'] as const;
export type ProtocolVersion = (typeof SUPPORTED_VERSIONS)[number];

/**
 * "3" when offered, else "2" when offered, else null (AGENT-PROTOCOL.md §8). The only
 * difference between them is StopTunnel, which the server prefers to have.
 */
export function negotiateVersion(offered: readonly string[]): ProtocolVersion | null {
  for (const v of SUPPORTED_VERSIONS) if (offered.includes(v)) return v;
  return null;
}

export interface AuthContext {
  /** The version negotiated for this session (written into AuthResp). */
  version: ProtocolVersion;
  connection: AgentConnection;
}

/**
 * What the caller supplies. Each handler returns the typed response or throws `AgentError`
 * (→ `{"Error": "<message>\n\nERR_NGROK_<n>"}`); any other throw is answered with a generic
 * error (no internals leak to the agent) and reported on `'handlerError'`.
 */
export interface AgentHandlers {
  auth(req: AuthRequest, ctx: AuthContext): Promise<AuthResponse>;
  bind(req: BindRequest, conn: AgentConnection): Promise<BindResponse>;
  /** Must accept repeats and unknown ids (the npm SDK unbinds twice). */
  unbind(req: UnbindRequest, conn: AgentConnection): Promise<void>;
  startTunnelWithLabel(req: StartTunnelWithLabelRequest, conn: AgentConnection): Promise<StartTunnelWithLabelResponse>;
  /** Default: `{Region: options.region ?? ""}`. */
  srvInfo?(req: SrvInfoRequest, conn: AgentConnection): Promise<SrvInfoResponse>;
  /** Default: refused with an error naming the message. */
  patchTunnelState?(req: PatchTunnelStateRequest, conn: AgentConnection): Promise<void>;
}

export interface AgentConnectionOptions {
  handlers: AgentHandlers;
  /** Close the connection when no Auth succeeded by then. Default 10 000 ms. */
  authTimeoutMs?: number;
  /** Time for the 4 type bytes of an agent-opened stream. Default 10 000 ms. */
  streamTypeTimeoutMs?: number;
  /** Time for a whole RPC request body. Default 10 000 ms. */
  rpcReadTimeoutMs?: number;
  /** Largest RPC request body. Default 1 MiB. */
  maxRpcBytes?: number;
  /** Server heartbeat, started after a successful Auth; `false` = none. Defaults 10 s / 20 s. */
  heartbeat?: { intervalMs?: number; toleranceMs?: number } | false;
  /** Default reply timeout of commands. Default 5 000 ms. */
  commandTimeoutMs?: number;
  /** After a failed Auth, how long the agent has to read the reply before the close. Default 1 000 ms. */
  authErrorLingerMs?: number;
  /** Region for the default SrvInfo answer. */
  region?: string;
}

export type CloseReason =
  | 'auth-timeout' // no successful Auth within authTimeoutMs
  | 'unauthenticated-stream' // a stream other than Auth/heartbeat before Auth succeeded
  | 'auth-failed' // Auth answered with an error
  | 'heartbeat-timeout' // the agent stopped echoing (or echoed wrong bytes)
  | 'agent-goaway' // the agent sent GOAWAY
  | 'transport' // the session closed under us
  | 'server'; // goAwayAndClose() by the caller

/** Details of a per-stream failure, for logs (never carries the request body). */
export interface StreamErrorInfo {
  streamId: number;
  type: number | null;
  typeName: string;
  kind: string;
  message: string;
}

/**
 * Events: `'authenticated'` (version), `'close'` (reason: CloseReason, err?: Error) once,
 * `'heartbeat'` (latencyMs), `'streamError'` (StreamErrorInfo) for refused/aborted streams and
 * malformed requests, `'handlerError'` (err, typeName) for non-AgentError throws.
 */
export class AgentConnection extends EventEmitter {
  readonly session: StreamSession;
  private readonly opts: AgentConnectionOptions;
  private readonly maxRpcBytes: number;
  private readonly rpcReadTimeoutMs: number;
  private readonly streamTypeTimeoutMs: number;
  private authTimer: NodeJS.Timeout | undefined;
  private heartbeater: Heartbeater | null = null;
  private authState: 'none' | 'pending' | 'done' = 'none';
  /** The outcome of the first Auth, awaited by the requests held until then. */
  private authOutcome: { done: Promise<boolean>; settle(ok: boolean): void } | null = null;
  private authServing = false;
  private heldBeforeAuth = 0;
  private closeReason: CloseReason | null = null;
  private proxyOpen = 0;
  private heartbeatStreams = 0;
  /** Set by drainAndClose(): no new proxy streams; GOAWAY once the open ones are done. */
  private drainDebug: string | null = null;
  /** The negotiated protocol version, once authenticated. */
  version: ProtocolVersion | null = null;
  /** The decoded Auth request, once authenticated. */
  auth: AuthRequest | null = null;

  constructor(session: StreamSession, opts: AgentConnectionOptions) {
    super();
    this.session = session;
    this.opts = opts;
    this.maxRpcBytes = opts.maxRpcBytes ?? 1024 * 1024;
    this.rpcReadTimeoutMs = opts.rpcReadTimeoutMs ?? 10_000;
    this.streamTypeTimeoutMs = opts.streamTypeTimeoutMs ?? 10_000;
    session.limitInput?.({ streams: PRE_AUTH_STREAMS, bytes: this.maxRpcBytes + PRE_AUTH_SLACK_BYTES });
    this.once('authenticated', () => session.limitInput?.(null));
    session.on('stream', (s: ProtocolStream) => void this.onStream(s));
    session.once('close', (err?: Error) => this.finish('transport', err));
    session.once('goaway', () => this.closeWith('agent-goaway'));
    this.authTimer = setTimeout(() => {
      if (this.authState !== 'done') this.closeWith('auth-timeout', MuxErrorCode.Protocol, 'authentication timeout');
    }, opts.authTimeoutMs ?? 10_000);
    if (session.closed) this.finish('transport');
  }

  get authenticated(): boolean {
    return this.authState === 'done';
  }

  /** Going away (drainAndClose): opens no new proxy stream. */
  get draining(): boolean {
    return this.drainDebug !== null;
  }

  get closed(): boolean {
    return this.closeReason !== null;
  }

  /** Proxy streams opened by `openProxy` and not yet closed. */
  get proxyStreamsOpen(): number {
    return this.proxyOpen;
  }

  /** Round-trip time of the last answered server heartbeat, ms. */
  get latencyMs(): number | null {
    return this.heartbeater?.lastLatencyMs ?? null;
  }

  /**
   * Whether the agent declared support for a command in its Auth: `{supported:true}` for "",
   * else `{supported:false, reason}` with the agent's text, or null when it sent none (too old).
   */
  commandSupport(kind: CommandKind): { supported: true } | { supported: false; reason: string | null } {
    const e = this.auth?.extra;
    const v = !e ? null : kind === 'stop' ? e.stopUnsupportedError : kind === 'restart' ? e.restartUnsupportedError : e.updateUnsupportedError;
    return v === '' ? { supported: true } : { supported: false, reason: v };
  }

  /** Opens a proxy stream (preamble written in one write); raw connection bytes follow. */
  openProxy(header: ProxyHeader, joinClientBytes = false): ProtocolStream {
    if (!this.authenticated || this.closed) throw new Error('agent connection is not authenticated or is closed');
    if (this.drainDebug !== null) throw new Error('agent connection is draining');
    const s = openProxyStream(this.session, header);
    // a TCP client's first bytes are usually waiting already: let them join the header's record
    if (joinClientBytes) this.session.holdFlush?.();
    this.proxyOpen++;
    s.once('close', () => {
      if (--this.proxyOpen === 0 && this.drainDebug !== null) this.goAwayAndClose(this.drainDebug);
    });
    return s;
  }

  /**
   * GOAWAY and close once the proxy streams in flight are done (at once when there are none);
   * no new ones meanwhile. An RS agent fails every stream when it reads a GOAWAY, so sending it
   * first would cut the connections a graceful shutdown is meant to let finish.
   */
  drainAndClose(debug = 'no error'): void {
    if (this.closed || this.drainDebug !== null) return;
    this.drainDebug = debug;
    if (this.proxyOpen === 0) this.goAwayAndClose(debug);
  }

  /** Restart / Stop / Update. Checking `commandSupport` first is the caller's business. */
  sendCommand(kind: CommandKind, update?: UpdateCommand, opts?: CommandOptions): Promise<CommandOutcome> {
    if (!this.authenticated || this.closed) return Promise.reject(new Error('agent connection is not authenticated or is closed'));
    return sendCommand(this.session, kind, update, { timeoutMs: this.opts.commandTimeoutMs, ...opts });
  }

  /**
   * StopTunnel (protocol "3" only: a "2" GO agent would take type 9 for a proxy stream).
   * Throws when the session negotiated "2": the caller closes the session instead.
   */
  stopTunnel(id: string, message: string, errorCode: number | string, opts?: CommandOptions): Promise<CommandOutcome> {
    if (this.version !== '3') return Promise.reject(new Error('StopTunnel needs protocol version 3'));
    if (this.closed) return Promise.reject(new Error('agent connection is closed'));
    return sendStopTunnel(this.session, { id, message, errorCode }, { timeoutMs: this.opts.commandTimeoutMs, ...opts });
  }

  /** GOAWAY (code 0, "no error") then close: both agent families reconnect. */
  goAwayAndClose(debug = 'no error'): void {
    this.closeWith('server', MuxErrorCode.None, debug);
  }

  // -------------------------------------------------------------------------------------------

  private closeWith(reason: CloseReason, code: number = MuxErrorCode.None, debug = 'no error'): void {
    if (this.closeReason !== null) return;
    this.finish(reason); // first, so the session's own 'close' does not report 'transport'
    if (!this.session.closed) {
      try {
        if (reason !== 'agent-goaway') this.session.goAway(code, debug);
      } finally {
        this.session.close();
      }
    }
  }

  private finish(reason: CloseReason, err?: Error): void {
    if (this.closeReason !== null) return;
    this.closeReason = reason;
    clearTimeout(this.authTimer);
    this.settleAuth(false);
    this.heartbeater?.stop();
    this.emit('close', reason, err);
  }

  private streamError(s: ProtocolStream, type: number | null, kind: string, message: string): void {
    const info: StreamErrorInfo = {
      streamId: s.id,
      type,
      typeName: type === null ? 'untyped' : streamTypeName(type),
      kind,
      message,
    };
    this.emit('streamError', info);
  }

  private async onStream(s: ProtocolStream): Promise<void> {
    s.on('error', () => {});
    if (this.closed) {
      s.reset(MuxErrorCode.StreamRefused);
      return;
    }
    const reader = new StreamReader(s);
    let type: number;
    try {
      const b = await reader.readExact(4, Date.now() + this.streamTypeTimeoutMs);
      if (b === null) {
        // Opened and closed without a type: nothing to answer.
        if (!s.destroyed && !s.writableEnded) s.end();
        return;
      }
      type = b.readUInt32BE(0);
    } catch (err) {
      const kind = err instanceof StreamReadError ? err.kind : 'closed';
      this.streamError(s, null, kind, (err as Error).message);
      if (!s.destroyed) s.reset(MuxErrorCode.StreamCancelled);
      return;
    }
    if (this.closed) {
      s.reset(MuxErrorCode.StreamRefused);
      return;
    }
    if (type === StreamType.Heartbeat) {
      if (this.heartbeatStreams >= MAX_AGENT_HEARTBEAT_STREAMS) {
        this.streamError(s, type, 'refused', `more than ${MAX_AGENT_HEARTBEAT_STREAMS} heartbeat streams`);
        s.reset(MuxErrorCode.StreamRefused);
        return;
      }
      this.heartbeatStreams++;
      await echoHeartbeats(s, reader).finally(() => this.heartbeatStreams--);
      return;
    }
    if (type === StreamType.Auth && this.authState === 'none' && !this.authServing) {
      this.authServing = true;
      try {
        await this.serveRpc(s, reader, type);
      } finally {
        this.authServing = false;
        this.settleAuth(this.authenticated);
      }
      return;
    }
    if (this.authState !== 'done' && type !== StreamType.Auth && !(await this.heldUntilAuthenticated(s, type))) return;
    if (!RPC_REQUESTS.has(type)) {
      // Proxy/commands are server-opened; anything else is unknown: refuse the stream, keep
      // the session (RS's own muxado refuses a stream it will not serve with StreamRefused).
      this.streamError(s, type, 'refused', `stream type ${streamTypeName(type)} is not accepted from an agent`);
      s.reset(MuxErrorCode.StreamRefused);
      return;
    }
    await this.serveRpc(s, reader, type);
  }

  /**
   * A stream other than Auth before Auth succeeded. An RPC request waits for the first Auth's
   * outcome (a few at most; the auth deadline bounds the wait) and is served once it succeeded,
   * refused if it failed. Anything else closes the connection (TUNNELS.md §2). True when it may
   * be served.
   */
  private async heldUntilAuthenticated(s: ProtocolStream, type: number): Promise<boolean> {
    if (!RPC_REQUESTS.has(type) || this.heldBeforeAuth >= MAX_HELD_BEFORE_AUTH) {
      this.streamError(s, type, 'unauthenticated', `${streamTypeName(type)} stream before a successful Auth`);
      s.reset(MuxErrorCode.Protocol);
      this.closeWith('unauthenticated-stream', MuxErrorCode.Protocol, 'authentication required');
      return false;
    }
    this.authOutcome ??= deferred();
    this.heldBeforeAuth++;
    const authenticated = await this.authOutcome.done;
    this.heldBeforeAuth--;
    if (authenticated && !this.closed) return true;
    this.streamError(s, type, 'unauthenticated', `${streamTypeName(type)} stream held for an Auth that failed`);
    if (!s.destroyed) s.reset(MuxErrorCode.StreamRefused);
    return false;
  }

  private settleAuth(authenticated: boolean): void {
    this.authOutcome?.settle(authenticated);
    this.authOutcome = null;
  }

  private async serveRpc(s: ProtocolStream, reader: StreamReader, type: number): Promise<void> {
    const name = streamTypeName(type);
    let value: unknown;
    try {
      ({ value } = await reader.readJson({ maxBytes: this.maxRpcBytes, timeoutMs: this.rpcReadTimeoutMs }));
    } catch (err) {
      const e = err instanceof StreamReadError ? err : new StreamReadError('closed', String(err));
      this.streamError(s, type, e.kind, e.message);
      if (e.kind === 'closed') return;
      const agentErr = invalidPayload(type, `invalid ${name} request: ${e.message}`);
      // oversize / timeout: the agent may still be writing (both agents write the whole request
      // before reading), so answer (for one that did finish) and then RST so its write fails
      // at once instead of stalling on flow control. Other cases: it has finished writing.
      const abortCode = e.kind === 'oversize' ? MuxErrorCode.FrameSize : e.kind === 'timeout' ? MuxErrorCode.StreamCancelled : null;
      this.reply(s, reader, errorReply(type, agentErr.format()), abortCode);
      if (type === StreamType.Auth && this.authState === 'none') this.failAuthAfterReply(s, abortCode !== null);
      return;
    }

    const request = RPC_REQUESTS.get(type)!;
    let answer: JsonObject;
    let authFailed = false;
    let decoded: object | undefined;
    try {
      // a second Auth is answered before its body is read: the session stays, whatever it holds
      if (type === StreamType.Auth && this.authState !== 'none') throw SECOND_AUTH;
      decoded = request.decode(value);
      answer = request.encode(await request.serve(this.rpcServer, decoded));
    } catch (err) {
      let agentErr: AgentError;
      if (err instanceof AgentError) agentErr = err;
      else if (err instanceof MessageDecodeError) {
        this.streamError(s, type, 'decode', err.message);
        agentErr = invalidPayload(type, `invalid ${name} request: ${err.message}`);
      } else {
        this.emit('handlerError', err, name);
        agentErr = new AgentError(0, `internal server error while handling ${name}`);
      }
      if (type === StreamType.Auth && err !== SECOND_AUTH) authFailed = true;
      answer = request.errorReply(agentErr.format(), decoded);
    }
    this.reply(s, reader, answer, null);
    if (authFailed) this.failAuthAfterReply(s);
  }

  /** The table's serving of each request: the caller's handlers, with defaults for the optional ones. */
  private readonly rpcServer: RpcServer = {
    authenticate: (req) => this.serveAuth(req),
    bind: (req) => this.opts.handlers.bind(req, this),
    unbind: (req) => this.opts.handlers.unbind(req, this),
    startTunnelWithLabel: (req) => this.opts.handlers.startTunnelWithLabel(req, this),
    srvInfo: async (req) => {
      const handler = this.opts.handlers.srvInfo;
      return handler ? handler.call(this.opts.handlers, req, this) : { region: this.opts.region ?? '' };
    },
    patchTunnelState: async (req) => {
      const handler = this.opts.handlers.patchTunnelState;
      if (!handler) throw AgentErrors.unsupportedMessage('PatchTunnelState', this.version ?? '');
      await handler.call(this.opts.handlers, req, this);
    },
  };

  private async serveAuth(r: AuthRequest): Promise<{ version: string; response: AuthResponse }> {
    this.authState = 'pending';
    const version = negotiateVersion(r.versions);
    if (version === null) throw AgentErrors.unsupportedVersion(r.versions, SUPPORTED_VERSIONS);
    const resp = await this.opts.handlers.auth(r, { version, connection: this });
    if (this.closed) throw new AgentError(0, 'connection closed during authentication');
    this.authState = 'done';
    this.version = version;
    this.auth = r;
    clearTimeout(this.authTimer);
    this.startHeartbeat();
    this.emit('authenticated', version);
    return { version, response: resp };
  }

  private startHeartbeat(): void {
    const hb = this.opts.heartbeat;
    if (hb === false) return;
    this.heartbeater = new Heartbeater(this.session, {
      intervalMs: hb?.intervalMs,
      toleranceMs: hb?.toleranceMs,
      onLatency: (ms) => this.emit('heartbeat', ms),
      onTimeout: (why: HeartbeatFailure) => this.closeWith('heartbeat-timeout', MuxErrorCode.None, `heartbeat ${why}`),
    });
    this.heartbeater.start();
  }

  /**
   * Writes the reply and FIN. Afterwards: with `abortCode`, RST once the reply is flushed;
   * else drain what the agent still sends until its FIN, and RST a stream left open after
   * the read timeout or flooded with more than 64 KiB.
   */
  private reply(s: ProtocolStream, reader: StreamReader, body: JsonObject, abortCode: number | null): void {
    if (s.destroyed) return;
    s.end(Buffer.from(JSON.stringify(body), 'utf8'));
    if (abortCode !== null) {
      let done = false;
      const rst = (): void => {
        if (done) return;
        done = true;
        clearTimeout(t);
        if (!s.destroyed) s.reset(abortCode);
      };
      const t = setTimeout(rst, 1_000);
      s.once('finish', rst);
      return;
    }
    void reader
      .drain(64 * 1024, Date.now() + this.rpcReadTimeoutMs)
      .then((ended) => ended, () => false)
      .then((ended) => {
        if (!ended && !s.destroyed) s.reset(MuxErrorCode.StreamCancelled);
      });
  }

  /**
   * A failed Auth closes the connection once the agent had the time to read the reply: when it
   * ends its side, or after the linger. A stream we reset ourselves (`reset`: an oversize or slow
   * request the agent may still be writing) waits the whole linger: closing at once would leave
   * its unread bytes in our socket, and the kernel's RST could cost the agent the reply.
   */
  private failAuthAfterReply(s: ProtocolStream, reset = false): void {
    this.authState = 'none';
    let done = false;
    const close = (): void => {
      if (done) return;
      done = true;
      clearTimeout(t);
      this.closeWith('auth-failed', MuxErrorCode.None, 'authentication failed');
    };
    const t = setTimeout(close, this.opts.authErrorLingerMs ?? 1_000);
    s.once('end', close);
    if (!reset) s.once('close', close);
  }
}

function deferred(): { done: Promise<boolean>; settle(ok: boolean): void } {
  let settle: (ok: boolean) => void = () => {};
  const done = new Promise<boolean>((resolve) => (settle = resolve));
  return { done, settle };
}

/** Thrown inside serveRpc for a second Auth: answered with an error, the session stays. */
const SECOND_AUTH = new AgentError(0, 'this session is already authenticated');

/** A request that could not be read: the code the protocol has for its kind (AGENT-PROTOCOL.md §7), else none. */
function invalidPayload(type: number, detail: string): AgentError {
  if (type === StreamType.Auth) return AgentErrors.invalidAuthPayload(detail);
  if (type === StreamType.Bind || type === StreamType.StartTunnelWithLabel) return AgentErrors.invalidBindPayload(detail);
  return new AgentError(0, detail);
}
