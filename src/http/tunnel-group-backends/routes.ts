import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { TunnelGroupBackendService } from '../../domain/tunnel-group-backends/service.js';
import { errors } from '../../domain/errors.js';
import { deleteRoute, getRoute, listRoute } from '../common/resource-routes.js';
import { IdParams, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { baseUrl } from '../pipeline/base-url.js';
import { presentTunnelGroupBackend } from './present.js';
import { CreateTunnelGroupBackendBody, TunnelGroupBackendListResponse, TunnelGroupBackendRef, UpdateTunnelGroupBackendBody } from './schemas.js';

export interface TunnelGroupBackendRouteDeps {
  groups: TunnelGroupBackendService;
  publicUrl: string | undefined;
}

const tags = ['Tunnel Group Backends'];
const collection = '/backends/tunnel_group';
const item = '/backends/tunnel_group/:id';

export async function tunnelGroupBackendRoutes(fastify: FastifyInstance, deps: TunnelGroupBackendRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { groups, publicUrl } = deps;

  app.post(
    collection,
    {
      schema: {
        operationId: 'createTunnelGroupBackend',
        summary: 'Create a tunnel group backend: the live labeled tunnels carrying all of its labels.',
        tags,
        security,
        body: CreateTunnelGroupBackendBody,
        response: { 201: TunnelGroupBackendRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const group = await groups.create(request.principal, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        labels: body.labels ?? undefined,
      });
      const shaped = presentTunnelGroupBackend(group, baseUrl(request, publicUrl));
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  getRoute(app, {
    url: item,
    operationId: 'getTunnelGroupBackend',
    summary: 'Get a tunnel group backend with the tunnels it matches now.',
    tags,
    response: TunnelGroupBackendRef,
    get: (caller, id) => groups.get(caller, id),
    present: presentTunnelGroupBackend,
    publicUrl,
  });

  listRoute(app, {
    url: collection,
    field: 'backends',
    operationId: 'listTunnelGroupBackends',
    summary: 'List the tunnel group backends of the account, newest first.',
    tags,
    response: TunnelGroupBackendListResponse,
    list: (caller, beforeId, limit) => groups.list(caller, beforeId, limit),
    present: presentTunnelGroupBackend,
    publicUrl,
  });

  app.patch(
    item,
    {
      schema: {
        operationId: 'updateTunnelGroupBackend',
        summary: 'Update a tunnel group backend; absent or null fields stay, given labels replace them all.',
        tags,
        security,
        params: IdParams,
        body: UpdateTunnelGroupBackendBody,
        response: { 200: TunnelGroupBackendRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      if (body.id != null && body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
      const group = await groups.update(request.principal, id, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        labels: body.labels ?? undefined,
      });
      return presentTunnelGroupBackend(group, baseUrl(request, publicUrl));
    },
  );

  deleteRoute(app, {
    url: item,
    operationId: 'deleteTunnelGroupBackend',
    summary: 'Delete a tunnel group backend; refused (409) while a TLS edge backend module names it.',
    tags,
    deleted: 'Deleted.',
    errors: { 409: errorResponse('A TLS edge backend module names the group: remove or repoint it first.') },
    remove: (caller, id) => groups.delete(caller, id),
  });
}
