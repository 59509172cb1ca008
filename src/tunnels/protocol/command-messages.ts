/** Server → agent commands: Restart (4) `{}`, Stop (5) `{}`, Update (6), StopTunnel (9), and their replies. */
import { type JsonObject, str, requireObject } from './json-fields.js';

export interface UpdateCommand {
  /** "" = the latest. */
  version: string;
  permitMajorVersion: boolean;
}

export function encodeUpdate(c: UpdateCommand): JsonObject {
  return { Version: c.version, PermitMajorVersion: c.permitMajorVersion };
}

export interface StopTunnelCommand {
  /** The tunnel id from BindResp / StartTunnelWithLabelResp. */
  id: string;
  message: string;
  /** `308` or `"ERR_NGROK_308"`; written as the string (RS: Option<String>, GO: string). */
  errorCode: number | string;
}

export function encodeStopTunnel(c: StopTunnelCommand): JsonObject {
  const code = typeof c.errorCode === 'number' ? (c.errorCode > 0 ? `ERR_NGROK_${c.errorCode}` : '') : c.errorCode;
  return { Id: c.id, Message: c.message, ErrorCode: code };
}

/** A command reply (`{}`, `{"Error":""}`, `{"Error":"…"}`): the error text, "" for success. */
export function decodeCommandResp(value: unknown): string {
  const o = requireObject(value, 'command response');
  return str(o, 'Error', '');
}
