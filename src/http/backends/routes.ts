import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { TunnelGroupService } from '../../domain/backends/service.js';
import { errors } from '../../domain/errors.js';
import { nextPageUri, parsePaging } from '../common/paging.js';
import { IdParams, PagingQuery, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { baseUrl } from '../pipeline/base-url.js';
import { presentTunnelGroup } from './present.js';
import { CreateTunnelGroupBody, TunnelGroupListResponse, TunnelGroupRef, UpdateTunnelGroupBody } from './schemas.js';

export interface TunnelGroupRouteDeps {
  groups: TunnelGroupService;
  publicUrl: string | undefined;
}

const tags = ['Tunnel Group Backends'];
const collection = '/backends/tunnel_group';
const item = '/backends/tunnel_group/:id';

export async function tunnelGroupRoutes(fastify: FastifyInstance, deps: TunnelGroupRouteDeps): Promise<void> {
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
        body: CreateTunnelGroupBody,
        response: { 201: TunnelGroupRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const group = await groups.create(request.principal, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        labels: body.labels ?? undefined,
      });
      const shaped = presentTunnelGroup(group, baseUrl(request, publicUrl));
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  app.get(
    item,
    {
      schema: {
        operationId: 'getTunnelGroupBackend',
        summary: 'Get a tunnel group backend with the tunnels it matches now.',
        tags,
        security,
        params: IdParams,
        response: { 200: TunnelGroupRef, ...commonErrors },
      },
    },
    async (request) => presentTunnelGroup(await groups.get(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );

  app.get(
    collection,
    {
      schema: {
        operationId: 'listTunnelGroupBackends',
        summary: 'List the tunnel group backends of the account, newest first.',
        tags,
        security,
        querystring: PagingQuery,
        response: { 200: TunnelGroupListResponse, ...commonErrors },
      },
    },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await groups.list(request.principal, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}${collection}`;
      return {
        backends: page.items.map((group) => presentTunnelGroup(group, base)),
        uri,
        next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit),
      };
    },
  );

  app.patch(
    item,
    {
      schema: {
        operationId: 'updateTunnelGroupBackend',
        summary: 'Update a tunnel group backend; absent or null fields stay, given labels replace them all.',
        tags,
        security,
        params: IdParams,
        body: UpdateTunnelGroupBody,
        response: { 200: TunnelGroupRef, ...commonErrors, ...bodyErrors },
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
      return presentTunnelGroup(group, baseUrl(request, publicUrl));
    },
  );

  app.delete(
    item,
    {
      schema: {
        operationId: 'deleteTunnelGroupBackend',
        summary: 'Delete a tunnel group backend; refused (409) while a TLS edge backend module names it.',
        tags,
        security,
        params: IdParams,
        response: {
          204: { type: 'null', description: 'Deleted.' },
          ...commonErrors,
          409: errorResponse('A TLS edge backend module names the group: remove or repoint it first.'),
        },
      },
    },
    async (request, reply) => {
      await groups.delete(request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
