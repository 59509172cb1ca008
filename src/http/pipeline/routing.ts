import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, errors } from '../../domain/errors.js';
import { sendError } from './errors.js';

/**
 * SPEC §2 step 1, before anything else looks at the request (authentication, and reading a
 * body): an unknown path is 404; a known path with the wrong method is 405 with an Allow header.
 * Fastify answers both with 404, so the route table is kept here to tell them apart. Returns
 * the check, which the request gate runs first.
 */
export function registerRouting(app: FastifyInstance): (request: FastifyRequest) => void {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];

  app.addHook('onRoute', (route) => {
    const source = `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`;
    let entry = routes.find((r) => r.pattern.source === source);
    if (!entry) routes.push((entry = { pattern: new RegExp(source), methods: new Set() }));
    for (const method of [route.method].flat()) entry.methods.add(method);
  });

  const unrouted = (request: FastifyRequest): ApiError => {
    const path = decodedPath(request.url);
    const allowed = new Set<string>();
    for (const route of routes) if (route.pattern.test(path)) for (const m of route.methods) allowed.add(m);
    if (allowed.size > 0 && !allowed.has(request.method)) return errors.methodNotAllowed(request.method, [...allowed].sort());
    return errors.notFound();
  };

  app.setNotFoundHandler((request, reply) => sendError(reply, unrouted(request)));

  // Called first in onRequest, so that no body is read for a request that has nowhere to go.
  return (request) => {
    if (request.is404) throw unrouted(request);
    // The router lets a parameter be empty (`/credentials/` matches `/credentials/:id`); paths
    // are matched exactly, so that is an unknown path.
    const params = request.params as Record<string, string> | undefined;
    if (params) for (const key in params) if (params[key] === '') throw errors.notFound();
  };
}

/** The path as the router saw it: percent-decoded where that is valid. */
function decodedPath(url: string): string {
  const path = url.split('?', 1)[0]!;
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}
