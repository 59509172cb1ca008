import pino, { type BaseLogger, type LevelWithSilent, type Logger as PinoLogger } from 'pino';
import { stdoutDestination } from './log-destination.js';

export type Logger = PinoLogger;

/**
 * JSON logs. Request lines never include headers or bodies; scrubbing secret-named fields is a
 * second line of defence should an object carrying request data be logged. It is done in the
 * `log` formatter, which costs a few key checks per line, where pino's path-based `redact`
 * cost more than the rest of a line's serialization.
 */
export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: () => `,"time":"${isoTimeNow()}"`,
      formatters: { log: scrubSecrets },
    },
    destination ?? stdoutDestination(),
  );
}

let lastMs = 0;
let lastTime = '';

/** Now in ISO 8601 (pino's isoTime), formatted once per millisecond however many lines share it. */
export function isoTimeNow(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = new Date(now).toISOString();
  }
  return lastTime;
}

const SECRET_KEYS = new Set(['authorization', 'token', 'secret', 'key', 'api_key', 'apiKey', 'password', 'cookie']);
const NESTED_KEYS = ['headers', 'req', 'request', 'body'];

/** A copy of the log object with secret-named fields, at the top or one level down, censored. */
export function scrubSecrets(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key of SECRET_KEYS) {
    if (key in object) (copy ??= { ...object })[key] = '[redacted]';
  }
  for (const key of NESTED_KEYS) {
    const inner = object[key];
    if (inner !== null && typeof inner === 'object') (copy ??= { ...object })[key] = scrubSecrets(inner as Record<string, unknown>);
  }
  return copy ?? object;
}

export interface RequestLine {
  operationId: string;
  method: string;
  route: string | undefined;
  status: number;
  errorCode: string | undefined;
  durationMs: number;
  principalId: string | undefined;
}

/**
 * Writes the one line per request (at info) straight to the logger's destination, in the same
 * JSON shape pino writes: it is the only line most requests produce, and building it by hand
 * from fields that are all ids, templates and numbers costs a fraction of a generic log call.
 */
export function requestLineWriter(logger: Pick<BaseLogger, 'info'>): (line: RequestLine) => void {
  const pinoLogger = logger as unknown as PinoLogger;
  const stream = (pinoLogger as unknown as Record<symbol, { write(text: string): void }>)[pino.symbols.streamSym];
  if (!stream) return (line) => logger.info(line, 'request completed');
  return (line) => {
    if (!pinoLogger.isLevelEnabled('info')) return;
    let text = `{"level":30,"time":"${isoTimeNow()}","operation_id":${JSON.stringify(line.operationId)},"method":${JSON.stringify(line.method)}`;
    if (line.route !== undefined) text += `,"route":${JSON.stringify(line.route)}`;
    text += `,"status":${line.status}`;
    if (line.errorCode !== undefined) text += `,"error_code":${JSON.stringify(line.errorCode)}`;
    text += `,"duration_ms":${line.durationMs}`;
    if (line.principalId !== undefined) text += `,"principal_id":${JSON.stringify(line.principalId)}`;
    stream.write(`${text},"msg":"request completed"}\n`);
  };
}
