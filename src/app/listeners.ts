import type { Config } from '../config.js';
import type { HttpApp } from '../http/app.js';

/**
 * Something that accepts connections: the HTTP API today; the data plane's listeners
 * (src/tunnels/) join it. start.ts starts them in order and stops them in phases: every one is
 * told to begin its shutdown first, then all drain together, then the store is closed.
 */
export interface Listener {
  readonly name: string;
  /** Starts accepting; resolves with the address it listens on. */
  listen(): Promise<string>;
  /** Phase 1, synchronous: stop looking ready, close connections after their current answer. */
  beginShutdown(): void;
  /** Phase 2: stop accepting, let in-flight work finish within the grace period, then cut. */
  close(graceMs: number): Promise<void>;
}

/** The HTTP API on PORT/HOST. */
export function httpListener(app: HttpApp, config: Config): Listener {
  return {
    name: 'http',
    listen: () => app.listen({ port: config.port, host: config.host }),
    beginShutdown: () => app.beginShutdown(),
    close: async (graceMs) => {
      // Fastify's close stops accepting, waits for in-flight requests, then runs onClose.
      const timer = setTimeout(() => app.server.closeAllConnections(), graceMs);
      try {
        await app.close();
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
