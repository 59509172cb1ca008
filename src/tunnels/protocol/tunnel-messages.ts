/** The other requests an agent makes of a session: Unbind (2), StartTunnelWithLabel (7), SrvInfo (8), PatchTunnelState (10). */
import { type JsonObject, str, optStr, optBool, strMap, requireObject } from './json-fields.js';

export interface UnbindRequest {
  id: string;
}

export function decodeUnbind(value: unknown): UnbindRequest {
  const o = requireObject(value, 'Unbind');
  return { id: str(o, 'Id', '') };
}

export function encodeUnbindResp(): JsonObject {
  return {};
}

export interface StartTunnelWithLabelRequest {
  labels: Record<string, string>;
  forwardsTo: string;
  forwardsProto: string;
  metadata: string;
}

export function decodeStartTunnelWithLabel(value: unknown): StartTunnelWithLabelRequest {
  const o = requireObject(value, 'StartTunnelWithLabel');
  return {
    labels: strMap(o, 'Labels', ''),
    forwardsTo: str(o, 'ForwardsTo', ''),
    forwardsProto: str(o, 'ForwardsProto', ''),
    metadata: str(o, 'Metadata', ''),
  };
}

export interface StartTunnelWithLabelResponse {
  id: string;
}

export function encodeStartTunnelWithLabelResp(r: StartTunnelWithLabelResponse): JsonObject {
  return { Id: r.id };
}

export type SrvInfoRequest = Record<string, never>;

export function decodeSrvInfo(value: unknown): SrvInfoRequest {
  requireObject(value, 'SrvInfo');
  return {};
}

export interface SrvInfoResponse {
  region: string;
}

export function encodeSrvInfoResp(r: SrvInfoResponse): JsonObject {
  return { Region: r.region };
}

export interface PatchTunnelStateRequest {
  tunnelId: string;
  /** null = not to be changed. */
  name: string | null;
  description: string | null;
  metadata: string | null;
  poolingEnabled: boolean | null;
  trafficPolicy: string | null;
}

export function decodePatchTunnelState(value: unknown): PatchTunnelStateRequest {
  const o = requireObject(value, 'PatchTunnelState');
  return {
    tunnelId: str(o, 'TunnelId', ''),
    name: optStr(o, 'Name', ''),
    description: optStr(o, 'Description', ''),
    metadata: optStr(o, 'Metadata', ''),
    poolingEnabled: optBool(o, 'PoolingEnabled', ''),
    trafficPolicy: optStr(o, 'TrafficPolicy', ''),
  };
}

export function encodePatchTunnelStateResp(): JsonObject {
  return { Error: '' };
}
