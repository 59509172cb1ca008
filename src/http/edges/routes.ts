import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { TlsEdgeService } from '../../domain/edges/service.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { nextPageUri, parsePaging } from '../common/paging.js';
import { IdParams, PagingQuery, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { presentEdge } from './present.js';
import { CreateTlsEdgeBody, TlsEdgeListResponse, TlsEdgeRef, UpdateTlsEdgeBody } from './schemas.js';

export interface EdgeRouteDeps {
  edges: TlsEdgeService;
  publicUrl: string | undefined;
}

const tags = ['TLS Edges'];

export async function tlsEdgeRoutes(fastify: FastifyInstance, deps: EdgeRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { edges, publicUrl } = deps;

  app.post(
    '/edges/tls',
    {
      schema: {
        operationId: 'createTlsEdge',
        summary: 'Create a TLS edge, optionally with its backend and traffic policy modules.',
        tags,
        security,
        body: CreateTlsEdgeBody,
        response: { 201: TlsEdgeRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const edge = await edges.create(request.principal, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        hostports: body.hostports ?? undefined,
        backend: body.backend ? { enabled: body.backend.enabled ?? undefined, backendId: body.backend.backend_id } : undefined,
        trafficPolicy: body.traffic_policy ? { enabled: body.traffic_policy.enabled ?? undefined, value: body.traffic_policy.value } : undefined,
      });
      const shaped = presentEdge(edge, baseUrl(request, publicUrl));
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  app.get(
    '/edges/tls/:id',
    {
      schema: {
        operationId: 'getTlsEdge',
        summary: 'Get a TLS edge.',
        tags,
        security,
        params: IdParams,
        response: { 200: TlsEdgeRef, ...commonErrors },
      },
    },
    async (request) => presentEdge(await edges.get(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );

  app.get(
    '/edges/tls',
    {
      schema: {
        operationId: 'listTlsEdges',
        summary: 'List the TLS edges of the account, newest first.',
        tags,
        security,
        querystring: PagingQuery,
        response: { 200: TlsEdgeListResponse, ...commonErrors },
      },
    },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await edges.list(request.principal, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}/edges/tls`;
      return {
        tls_edges: page.items.map((edge) => presentEdge(edge, base)),
        uri,
        next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit),
      };
    },
  );

  app.patch(
    '/edges/tls/:id',
    {
      schema: {
        operationId: 'updateTlsEdge',
        summary: 'Update a TLS edge; absent or null fields stay, a given backend or traffic_policy replaces that module.',
        tags,
        security,
        params: IdParams,
        body: UpdateTlsEdgeBody,
        response: { 200: TlsEdgeRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      if (body.id != null && body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
      const edge = await edges.update(request.principal, id, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        hostports: body.hostports ?? undefined,
        backend: body.backend ? { enabled: body.backend.enabled ?? undefined, backendId: body.backend.backend_id } : undefined,
        trafficPolicy: body.traffic_policy ? { enabled: body.traffic_policy.enabled ?? undefined, value: body.traffic_policy.value } : undefined,
      });
      return presentEdge(edge, baseUrl(request, publicUrl));
    },
  );

  app.delete(
    '/edges/tls/:id',
    {
      schema: {
        operationId: 'deleteTlsEdge',
        summary: 'Delete a TLS edge and its modules.',
        tags,
        security,
        params: IdParams,
        response: { 204: { type: 'null', description: 'Deleted.' }, ...commonErrors },
      },
    },
    async (request, reply) => {
      await edges.delete(request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
