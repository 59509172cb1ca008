import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { createLogger, type Logger } from '../../src/observability/logger.js';

/**
 * One variant of Fastify plumbing for bench/experiments/fastify-overhead.ts (VARIANT=A|B|C|D);
 * prints `listening <url>` and exits when stdin closes.
 *   A. burrow's shape: pino at warn with burrow's redaction (Fastify makes a child logger per
 *      request) and six async hooks — onRequest ×2 (shutdown flag; auth), preValidation, onSend
 *      (two headers), onResponse ×2 (log line, metrics) — around a handler that awaits once;
 *   B. A with a lazy child logger (LazyChildLogger below): the pino child is only made when a
 *      request actually logs at an enabled level — the proposal for src/server/app.ts;
 *   C. A with no logger at all: the most B could save;
 *   D. no hooks, no logger: what Fastify itself costs for this route.
 */
const variant = process.env.VARIANT ?? 'A';
const body = {
  id: 'cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ',
  uri: 'http://127.0.0.1/credentials/cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ',
  created_at: '2026-11-22T03:43:30Z',
  description: 'bench credential',
  metadata: '{"team":"bench"}',
  token: null,
  acl: ['bind:*.example.com', 'bind:bench.example.net'],
  owner_id: 'usr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ',
};
const schema = {
  response: {
    200: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        uri: { type: 'string' },
        created_at: { type: 'string' },
        description: { type: 'string' },
        metadata: { type: 'string' },
        token: { type: ['string', 'null'] },
        acl: { type: 'array', items: { type: 'string' } },
        owner_id: { type: 'string' },
      },
    },
  },
};

/**
 * A request logger that defers `logger.child(bindings)` until something is logged at an enabled
 * level: at LOG_LEVEL=warn a successful request never pays for a child logger.
 */
class LazyChildLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions | undefined,
  ) {}
  private get logger(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindings, this.options) as FastifyBaseLogger);
  }
  get level(): string {
    return this.parent.level;
  }
  set level(level: string) {
    this.logger.level = level;
  }
  fatal: FastifyBaseLogger['fatal'] = (...args: unknown[]) => this.log('fatal', args);
  error: FastifyBaseLogger['error'] = (...args: unknown[]) => this.log('error', args);
  warn: FastifyBaseLogger['warn'] = (...args: unknown[]) => this.log('warn', args);
  info: FastifyBaseLogger['info'] = (...args: unknown[]) => this.log('info', args);
  debug: FastifyBaseLogger['debug'] = (...args: unknown[]) => this.log('debug', args);
  trace: FastifyBaseLogger['trace'] = (...args: unknown[]) => this.log('trace', args);
  silent: FastifyBaseLogger['silent'] = () => {};
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
  private log(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]): void {
    if (!this.parent.isLevelEnabled(level)) return;
    (this.logger[level] as (...a: unknown[]) => void)(...args);
  }
}

function build(): FastifyInstance {
  const logger = createLogger('warn');
  const app = (
    variant === 'A'
      ? Fastify({ loggerInstance: logger as never, disableRequestLogging: true })
      : variant === 'B'
        ? Fastify({
            loggerInstance: logger as never,
            disableRequestLogging: true,
            childLoggerFactory: (_parent, bindings, options) => new LazyChildLogger(logger, bindings, options),
          })
        : Fastify()
  ) as FastifyInstance;
  let closing = false;
  let principal = '';
  if (variant !== 'D') {
    app.addHook('onRequest', async (_req, reply) => {
      if (closing) reply.header('Connection', 'close');
    });
    app.addHook('onRequest', async (req) => {
      principal = req.headers.authorization ?? '';
    });
    app.addHook('preValidation', async (req) => {
      if (req.headers['content-length'] === '1') throw new Error('body');
    });
    app.addHook('onSend', async (req, reply) => {
      reply.header('Ngrok-Operation-Id', req.id);
      reply.header('Cache-Control', 'no-store');
    });
    app.addHook('onResponse', async (req, reply) => {
      req.log.info({ status: reply.statusCode, principal }, 'request completed');
    });
    app.addHook('onResponse', async (_req, reply) => {
      if (reply.statusCode > 999) closing = true;
    });
  }
  app.get('/credentials/:id', { schema }, async () => {
    await Promise.resolve();
    return body;
  });
  return app;
}

const app = build();
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${address}\n`);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(0));
