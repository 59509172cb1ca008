// The traffic inspector's tap (CONSOLE.md §2): one request and its answer as the client sent and
// got them, handed to the recorder when the answer ends. Only set up while the account's capture
// is on; with capture off the proxy does nothing beyond one settings lookup.
import type http from 'node:http';
import type { Exchange, InspectionRecorder } from '../../domain/inspection/recorder.js';
import type { InspectionSettings } from '../../domain/inspection/types.js';
import { REPLAY_HEADER } from '../../domain/inspection/replay.js';
import type { PublicConnection } from './connections.js';
import { plainIp } from './proxy-proto.js';

/** What the data plane needs of the recorder. */
export type InspectionSink = Pick<InspectionRecorder, 'settingsFor' | 'record' | 'claimReplay'>;

/** The first `limit` bytes of a body (never more held) and its whole length. */
class BodyTap {
  private readonly pieces: Buffer[] = [];
  private kept = 0;
  length = 0;

  constructor(private readonly limit: number) {}

  add(chunk: unknown, encoding?: unknown): void {
    if (typeof chunk !== 'string' && !(chunk instanceof Uint8Array)) return;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.length += bytes.length;
    if (this.kept >= this.limit) return;
    const piece = Buffer.from(bytes.subarray(0, this.limit - this.kept)); // a copy: the stream reuses nothing, but the caller may
    this.pieces.push(piece);
    this.kept += piece.length;
  }

  body(): { head: Buffer; length: number } {
    return { head: Buffer.concat(this.pieces), length: this.length };
  }
}

export interface CaptureTarget {
  readonly accountId: string;
  readonly endpointId: string;
  /** Set on a replay the API asked for (its id given in advance, so the API can answer with it). */
  readonly id?: string | undefined;
}

/**
 * Taps `res` (its head and what is written of its body) and returns the observer of the request's
 * body, which the proxy calls with each piece it forwards. Recorded at the answer's close.
 */
export function captureExchange(
  sink: InspectionSink,
  settings: InspectionSettings,
  target: CaptureTarget,
  conn: PublicConnection,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  /** The request's policy actions, filled in as they are taken. */
  actions: readonly string[],
): (chunk: Buffer) => void {
  const started = performance.now();
  const limit = settings.capture === 'bodies' ? settings.bodyLimitBytes : 0;
  const requestBody = new BodyTap(limit);
  const responseBody = new BodyTap(limit);
  const write = res.write;
  const end = res.end;
  res.write = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
    responseBody.add(chunk, rest[0]);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof res.write;
  res.end = function (this: http.ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    responseBody.add(chunk, rest[0]);
    return (end as (...args: unknown[]) => http.ServerResponse).call(this, chunk, ...rest);
  } as typeof res.end;
  res.once('close', () => {
    const bodies = settings.capture === 'bodies';
    sink.record(
      {
        accountId: target.accountId,
        endpointId: target.endpointId,
        ...(target.id !== undefined ? { id: target.id } : {}),
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        // 0: the client left before any answer was written
        status: res.headersSent ? res.statusCode : 0,
        durationMs: Math.round(performance.now() - started),
        clientIp: plainIp(conn.socket.remoteAddress ?? ''),
        requestHeaders: pairs(req.rawHeaders),
        responseHeaders: res.headersSent ? sentHeaders(res) : [],
        actions: [...actions],
        requestBody: bodies ? requestBody.body() : undefined,
        responseBody: bodies ? responseBody.body() : undefined,
      } satisfies Exchange,
      settings,
    );
  });
  return (chunk) => requestBody.add(chunk);
}

function pairs(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() !== REPLAY_HEADER) out.push([raw[i]!, raw[i + 1]!]);
  return out;
}

/**
 * The answer's header lines as written to the client. Node keeps the head it wrote in `_header`
 * (undocumented, in every version); the headers given to writeHead as a list are nowhere else.
 */
function sentHeaders(res: http.ServerResponse): [string, string][] {
  const head = (res as http.ServerResponse & { _header?: string | null })._header;
  if (typeof head !== 'string') return [];
  const out: [string, string][] = [];
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) out.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  return out;
}
