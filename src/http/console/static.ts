import { readFile } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Where `vite build` writes the console (package root/dist/console), from src/ or dist/ alike. */
export const CONSOLE_ROOT = fileURLToPath(new URL('../../../dist/console/', import.meta.url));

/**
 * CONSOLE.md §3: scripts and styles only from this origin, no inline script, never framed. Styles
 * set through the DOM (uPlot, Preact's style props) are not inline style attributes and pass.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

const config = { public: true };
const schema = { hide: true };

/**
 * The console's static files, read from disk on each request (a handful of small files, and a
 * rebuild shows without a restart). A dozen lines instead of a plugin: no dependency to add, and
 * the security headers are ours. Only files under CONSOLE_ROOT with a known type are served.
 */
export async function consoleStaticRoutes(app: FastifyInstance, options: { root?: string } = {}): Promise<void> {
  const root = options.root ?? CONSOLE_ROOT;
  app.get('/console', { config, schema }, async (_request, reply) => reply.code(308).header('Location', '/console/').send(null));
  const serve = async (wanted: string, reply: FastifyReply) => {
    const path = resolve(root, wanted);
    const type = TYPES[extname(path)];
    if (!path.startsWith(root.endsWith(sep) ? root : root + sep) || type === undefined) return notFound(reply);
    let body: Buffer;
    try {
      body = await readFile(path);
    } catch {
      if (wanted === 'index.html') return reply.code(503).type('text/plain; charset=utf-8').send('The console is not built: run npm run build.\n');
      return notFound(reply);
    }
    securityHeaders(reply);
    return reply.type(type).send(body);
  };
  // Two routes: the routing check reads an empty wildcard as an unknown path.
  app.get('/console/', { config, schema }, async (_request, reply) => serve('index.html', reply));
  app.get('/console/*', { config, schema }, async (request, reply) => serve((request.params as { '*': string })['*'], reply));
}

function securityHeaders(reply: FastifyReply): void {
  reply.header('Content-Security-Policy', CONSOLE_CSP);
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('X-Frame-Options', 'DENY');
  reply.header('Referrer-Policy', 'no-referrer');
}

function notFound(reply: FastifyReply) {
  securityHeaders(reply);
  return reply.code(404).type('text/plain; charset=utf-8').send('Not found.\n');
}
