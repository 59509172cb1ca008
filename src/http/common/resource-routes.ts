import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import type { Principal } from '../../domain/accounts/types.js';
import type { PageOf } from '../../domain/paging.js';
import { baseUrl } from '../pipeline/base-url.js';
import { nextPageUri, parsePaging } from './paging.js';
import { IdParams, PagingQuery, commonErrors, security } from './schemas.js';

/*
 * The routes every resource writes alike: a page of the collection, one object by id, and
 * deleting one by id. Routes with a body are written out in each routes.ts, since mapping the
 * body is the resource's own.
 */

/** How a route appears in /openapi.json; the helpers add security, params and errors. */
interface RouteDoc {
  url: string;
  operationId: string;
  summary: string;
  tags: string[];
}

interface ReadRoute<T> extends RouteDoc {
  /** The 200 answer's schema. */
  response: TSchema;
  /** Shapes one item for the wire; `base` is the absolute base of its uri fields. */
  present: (item: T, base: string) => unknown;
  publicUrl: string | undefined;
}

/**
 * GET of a collection, one page newest first (SPEC §6): `{<field>: [...], uri, next_page_uri}`,
 * where `uri` is the collection's own and the next page's keeps the caller's limit.
 */
export function listRoute<T extends { id: string }>(
  app: FastifyInstance,
  route: ReadRoute<T> & { field: string; list: (caller: Principal, beforeId: string | undefined, limit: number) => Promise<PageOf<T>> },
): void {
  const { url, operationId, summary, tags, response, field, list, present, publicUrl } = route;
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    url,
    { schema: { operationId, summary, tags, security, querystring: PagingQuery, response: { 200: response, ...commonErrors } } },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await list(request.principal, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}${url}`;
      return {
        [field]: page.items.map((item) => present(item, base)),
        uri,
        next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit),
      };
    },
  );
}

/** GET of one object by the id in its path; a 404 is the service's to throw. */
export function getRoute<T>(app: FastifyInstance, route: ReadRoute<T> & { get: (caller: Principal, id: string) => Promise<T> }): void {
  const { url, operationId, summary, tags, response, get, present, publicUrl } = route;
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    url,
    { schema: { operationId, summary, tags, security, params: IdParams, response: { 200: response, ...commonErrors } } },
    async (request) => present(await get(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );
}

/** DELETE of one object by the id in its path: 204 with no body. */
export function deleteRoute(
  app: FastifyInstance,
  route: RouteDoc & {
    /** The 204's description. */
    deleted: string;
    /** Error answers besides the common ones. */
    errors?: Record<number, unknown>;
    remove: (caller: Principal, id: string) => Promise<void>;
  },
): void {
  const { url, operationId, summary, tags, deleted, errors, remove } = route;
  app.withTypeProvider<TypeBoxTypeProvider>().delete(
    url,
    { schema: { operationId, summary, tags, security, params: IdParams, response: { 204: { type: 'null', description: deleted }, ...commonErrors, ...errors } } },
    async (request, reply) => {
      await remove(request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
