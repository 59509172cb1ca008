import type { FastifyInstance } from 'fastify';
import { errors } from '../domain/errors.js';
import { sendError } from './errors.js';

/**
 * SPEC §2 step 1: an unknown path is 404; a known path with the wrong method is 405 with an
 * Allow header. Fastify answers both with 404, so the route table is kept here to tell them apart.
 */
export function registerNotFound(app: FastifyInstance): void {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];

  app.addHook('onRoute', (route) => {
    const source = `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`;
    let entry = routes.find((r) => r.pattern.source === source);
    if (!entry) routes.push((entry = { pattern: new RegExp(source), methods: new Set() }));
    for (const method of [route.method].flat()) entry.methods.add(method);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = new Set<string>();
    for (const route of routes) if (route.pattern.test(path)) for (const m of route.methods) allowed.add(m);
    if (allowed.size > 0 && !allowed.has(request.method)) {
      return sendError(reply, errors.methodNotAllowed(request.method, [...allowed].sort()));
    }
    return sendError(reply, errors.notFound());
  });
}
