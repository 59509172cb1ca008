/**
 * The RPC requests an agent makes, one row per stream type: how its body is decoded, which
 * handler serves it, how the answer and an error are written. As ngrok-rust pairs each request
 * with its response type and stream type (`rpc_req!(Bind, BindResp, BIND_REQ)`), a new request is
 * one row here and one method of `RpcServer`; a type with no row is refused (StreamRefused).
 */
import { decodeAuth, encodeAuthResp, type AuthRequest, type AuthResponse } from './auth-messages.js';
import { decodeBind, encodeBindResp, type BindRequest, type BindResponse } from './bind-messages.js';
import type { JsonObject } from './json-fields.js';
import { StreamType } from './stream-types.js';
import {
  decodePatchTunnelState,
  decodeSrvInfo,
  decodeStartTunnelWithLabel,
  decodeUnbind,
  encodePatchTunnelStateResp,
  encodeSrvInfoResp,
  encodeStartTunnelWithLabelResp,
  encodeUnbindResp,
  type PatchTunnelStateRequest,
  type SrvInfoRequest,
  type SrvInfoResponse,
  type StartTunnelWithLabelRequest,
  type StartTunnelWithLabelResponse,
  type UnbindRequest,
} from './tunnel-messages.js';

/** What serves each request on one connection (AgentConnection: the caller's handlers, with the session rules around Auth). */
export interface RpcServer {
  authenticate(req: AuthRequest): Promise<{ version: string; response: AuthResponse }>;
  bind(req: BindRequest): Promise<BindResponse>;
  unbind(req: UnbindRequest): Promise<void>;
  startTunnelWithLabel(req: StartTunnelWithLabelRequest): Promise<StartTunnelWithLabelResponse>;
  srvInfo(req: SrvInfoRequest): Promise<SrvInfoResponse>;
  patchTunnelState(req: PatchTunnelStateRequest): Promise<void>;
}

export interface RpcRequestKind<Req, Res> {
  readonly type: number;
  decode(value: unknown): Req;
  serve(server: RpcServer, req: Req): Promise<Res>;
  encode(res: Res): JsonObject;
  /**
   * The answer to a refused request: `Error` plus the response's other fields with empty values.
   * RS reads `Error` first and fails the call with it (rpc.rs), so it needs nothing else; the
   * other fields are there for decoders that read the whole response (GO). `req`: what was decoded.
   */
  errorReply(text: string, req: Partial<Req> | undefined): JsonObject;
}

/** A row with its request and response types erased, so that the rows fit in one table. */
type AnyRpcRequestKind = RpcRequestKind<object, unknown>;

function kind<Req extends object, Res>(row: RpcRequestKind<Req, Res>): AnyRpcRequestKind {
  return row as unknown as AnyRpcRequestKind;
}

const bareError = (text: string): JsonObject => ({ Error: text });

const ROWS = [
  kind<AuthRequest, { version: string; response: AuthResponse }>({
    type: StreamType.Auth,
    decode: decodeAuth,
    serve: (server, req) => server.authenticate(req),
    encode: ({ version, response }) => encodeAuthResp(version, response),
    errorReply: (text) => ({ Version: '', ClientId: '', Error: text, Extra: {} }),
  }),
  kind<BindRequest, BindResponse>({
    type: StreamType.Bind,
    decode: decodeBind,
    serve: (server, req) => server.bind(req),
    encode: encodeBindResp,
    errorReply: (text, req) => ({ Id: req?.id ?? '', URL: '', Proto: req?.proto ?? '', Opts: req?.opts ?? {}, Error: text, Extra: { Token: '' } }),
  }),
  kind<UnbindRequest, void>({
    type: StreamType.Unbind,
    decode: decodeUnbind,
    serve: (server, req) => server.unbind(req),
    encode: encodeUnbindResp,
    errorReply: bareError,
  }),
  kind<StartTunnelWithLabelRequest, StartTunnelWithLabelResponse>({
    type: StreamType.StartTunnelWithLabel,
    decode: decodeStartTunnelWithLabel,
    serve: (server, req) => server.startTunnelWithLabel(req),
    encode: encodeStartTunnelWithLabelResp,
    errorReply: (text) => ({ Id: '', Error: text }),
  }),
  kind<SrvInfoRequest, SrvInfoResponse>({
    type: StreamType.SrvInfo,
    decode: decodeSrvInfo,
    serve: (server, req) => server.srvInfo(req),
    encode: encodeSrvInfoResp,
    errorReply: (text) => ({ Region: '', Error: text }),
  }),
  kind<PatchTunnelStateRequest, void>({
    type: StreamType.PatchTunnelState,
    decode: decodePatchTunnelState,
    serve: (server, req) => server.patchTunnelState(req),
    encode: encodePatchTunnelStateResp,
    errorReply: bareError,
  }),
];

/** The requests an agent may open a stream for, by stream type. */
export const RPC_REQUESTS: ReadonlyMap<number, AnyRpcRequestKind> = new Map(ROWS.map((row) => [row.type, row]));

/** The error answer for a request of `type` (a bare `{"Error"}` for a type with no row). */
export function errorReply(type: number, text: string, req?: { id?: string; proto?: string; opts?: JsonObject }): JsonObject {
  return RPC_REQUESTS.get(type)?.errorReply(text, req) ?? bareError(text);
}
