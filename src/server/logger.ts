import pino, { type Logger as PinoLogger } from 'pino';
import type { LogLevel } from '../config.js';

export type Logger = PinoLogger;

/**
 * JSON logs. Request lines never include headers or bodies; the redaction below is a second
 * line of defence should an error object carry request data.
 */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'authorization',
          '*.authorization',
          'token',
          '*.token',
          'secret',
          '*.secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
