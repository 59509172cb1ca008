/** Stream types: the big-endian u32 at the start of every stream (AGENT-PROTOCOL.md §3). */
export const StreamType = {
  Auth: 0,
  Bind: 1,
  Unbind: 2,
  Proxy: 3,
  Restart: 4,
  Stop: 5,
  Update: 6,
  StartTunnelWithLabel: 7,
  SrvInfo: 8,
  StopTunnel: 9,
  PatchTunnelState: 10,
  Heartbeat: 0xffffffff,
} as const;
export type StreamType = (typeof StreamType)[keyof typeof StreamType];

const NAMES = new Map<number, string>(Object.entries(StreamType).map(([k, v]) => [v, k]));

/** `"Bind"`, or `"unknown(42)"`. */
export function streamTypeName(t: number): string {
  return NAMES.get(t) ?? `unknown(${t})`;
}

/** The 4-byte big-endian prefix of a stream of type `t`. */
export function encodeStreamType(t: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(t >>> 0, 0);
  return b;
}
