import type { FastifyBaseLogger } from 'fastify';
import type { Bindings } from 'pino';

/**
 * Fastify makes a child logger per request to carry its operation id; most requests never log
 * through it (the request line is written by the root logger), so it is made on first use.
 */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings) as unknown as FastifyBaseLogger;
}

class LazyChildLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: Parameters<FastifyBaseLogger['fatal']>) {
    this.logger.fatal(...args);
  }
  error(...args: Parameters<FastifyBaseLogger['error']>) {
    this.logger.error(...args);
  }
  warn(...args: Parameters<FastifyBaseLogger['warn']>) {
    this.logger.warn(...args);
  }
  info(...args: Parameters<FastifyBaseLogger['info']>) {
    this.logger.info(...args);
  }
  debug(...args: Parameters<FastifyBaseLogger['debug']>) {
    this.logger.debug(...args);
  }
  trace(...args: Parameters<FastifyBaseLogger['trace']>) {
    this.logger.trace(...args);
  }
  silent() {}
  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}
