import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ReservedAddrService, ReservedAddrView } from '../../domain/reservations/addrs.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { deleteRoute, getRoute, listRoute } from '../common/resource-routes.js';
import { uris } from '../common/refs.js';
import { IdParams, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { CreateReservedAddrBody, ReservedAddrListResponse, ReservedAddrRef, UpdateReservedAddrBody } from './schemas.js';
import { presentDescribed } from '../common/present.js';

export interface ReservedAddrRouteDeps {
  reservedAddrs: ReservedAddrService;
  publicUrl: string | undefined;
}

const tags = ['Reserved Addresses'];

export async function reservedAddrRoutes(fastify: FastifyInstance, deps: ReservedAddrRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { reservedAddrs, publicUrl } = deps;

  app.post(
    '/reserved_addrs',
    {
      schema: {
        operationId: 'createReservedAddr',
        summary: 'Reserve a TCP address: a free port of EDGE_TCP_PORTS that only this account may bind.',
        tags,
        security,
        body: CreateReservedAddrBody,
        response: { 201: ReservedAddrRef, ...commonErrors, ...bodyErrors, 409: errorResponse('No port of EDGE_TCP_PORTS is free.') },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const created = await reservedAddrs.create(request.principal, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        region: body.region ?? undefined,
      });
      const shaped = present(created, baseUrl(request, publicUrl));
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  getRoute(app, {
    url: '/reserved_addrs/:id',
    operationId: 'getReservedAddr',
    summary: 'Get a reserved address.',
    tags,
    response: ReservedAddrRef,
    get: (caller, id) => reservedAddrs.get(caller, id),
    present,
    publicUrl,
  });

  listRoute(app, {
    url: '/reserved_addrs',
    field: 'reserved_addrs',
    operationId: 'listReservedAddrs',
    summary: 'List the reserved addresses of the account, newest first.',
    tags,
    response: ReservedAddrListResponse,
    list: (caller, beforeId, limit) => reservedAddrs.list(caller, beforeId, limit),
    present,
    publicUrl,
  });

  app.patch(
    '/reserved_addrs/:id',
    {
      schema: {
        operationId: 'updateReservedAddr',
        summary: 'Update description or metadata; absent or null fields stay as they are.',
        tags,
        security,
        params: IdParams,
        body: UpdateReservedAddrBody,
        response: { 200: ReservedAddrRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      if (body.id != null && body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
      const updated = await reservedAddrs.update(request.principal, id, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
      });
      return present(updated, baseUrl(request, publicUrl));
    },
  );

  deleteRoute(app, {
    url: '/reserved_addrs/:id',
    operationId: 'deleteReservedAddr',
    summary: 'Delete a reserved address; a tunnel bound on it is stopped within a second.',
    tags,
    deleted: 'Deleted.',
    remove: (caller, id) => reservedAddrs.delete(caller, id),
  });
}

/** The reference API's shape: empty description and metadata are left out. */
function present(reserved: ReservedAddrView, base: string) {
  return {
    ...presentDescribed(reserved, uris.reservedAddr(base, reserved.id)),
    addr: reserved.addr,
    region: reserved.region,
  };
}
