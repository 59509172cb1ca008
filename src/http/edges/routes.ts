import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { TlsEdgeInput, TlsEdgeService } from '../../domain/edges/service.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { deleteRoute, getRoute, listRoute } from '../common/resource-routes.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { presentEdge } from './present.js';
import { terminationInput } from './tls-termination-routes.js';
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
      const edge = await edges.create(request.principal, edgeInput(request.body));
      const shaped = presentEdge(edge, baseUrl(request, publicUrl));
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  getRoute(app, {
    url: '/edges/tls/:id',
    operationId: 'getTlsEdge',
    summary: 'Get a TLS edge.',
    tags,
    response: TlsEdgeRef,
    get: (caller, id) => edges.get(caller, id),
    present: presentEdge,
    publicUrl,
  });

  listRoute(app, {
    url: '/edges/tls',
    field: 'tls_edges',
    operationId: 'listTlsEdges',
    summary: 'List the TLS edges of the account, newest first.',
    tags,
    response: TlsEdgeListResponse,
    list: (caller, beforeId, limit) => edges.list(caller, beforeId, limit),
    present: presentEdge,
    publicUrl,
  });

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
      const edge = await edges.update(request.principal, id, edgeInput(body));
      return presentEdge(edge, baseUrl(request, publicUrl));
    },
  );

  deleteRoute(app, {
    url: '/edges/tls/:id',
    operationId: 'deleteTlsEdge',
    summary: 'Delete a TLS edge and its modules.',
    tags,
    deleted: 'Deleted.',
    remove: (caller, id) => edges.delete(caller, id),
  });
}

/** The body of a create or an update, as the service takes it: null and absent both mean "not given". */
function edgeInput(body: Static<typeof CreateTlsEdgeBody>): TlsEdgeInput {
  return {
    description: body.description ?? undefined,
    metadata: body.metadata ?? undefined,
    hostports: body.hostports ?? undefined,
    backend: body.backend ? { enabled: body.backend.enabled ?? undefined, backendId: body.backend.backend_id } : undefined,
    trafficPolicy: body.traffic_policy ? { enabled: body.traffic_policy.enabled ?? undefined, value: body.traffic_policy.value } : undefined,
    tlsTermination: body.tls_termination ? terminationInput(body.tls_termination) : undefined,
  };
}
