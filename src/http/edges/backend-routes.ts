import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { TlsEdgeService } from '../../domain/edges/service.js';
import { deleteRoute, getRoute } from '../common/resource-routes.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { baseUrl } from '../pipeline/base-url.js';
import { moduleOfPutBody } from './module-body.js';
import { presentBackend } from './present.js';
import { BackendModuleRef, ReplaceBackendBody } from './schemas.js';

const tags = ['TLS Edge Backend Module'];

/** `/edges/tls/{id}/backend` (TUNNELS.md §4), beside the traffic policy module's routes and like them. */
export async function backendModuleRoutes(fastify: FastifyInstance, deps: { edges: TlsEdgeService; publicUrl: string | undefined }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { edges, publicUrl } = deps;
  const url = '/edges/tls/:id/backend';

  app.put(
    url,
    {
      schema: {
        operationId: 'replaceTlsEdgeBackendModule',
        summary: 'Replace the backend module of a TLS edge. Send {"backend_id","enabled"}, or {"id","module"}.',
        tags,
        security,
        params: IdParams,
        body: ReplaceBackendBody,
        response: { 200: BackendModuleRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { enabled, value, field } = moduleOfPutBody(request.body, request.params.id, 'backend_id', 'is required: send the id of a tunnel group backend (bkdtg_…)');
      const module = { enabled, backendId: value };
      return presentBackend(await edges.replaceBackend(request.principal, request.params.id, module, field), baseUrl(request, publicUrl));
    },
  );

  getRoute(app, {
    url,
    operationId: 'getTlsEdgeBackendModule',
    summary: 'Get the backend module of a TLS edge; 404 when it has none.',
    tags,
    response: BackendModuleRef,
    get: (caller, id) => edges.getBackend(caller, id),
    present: presentBackend,
    publicUrl,
  });

  deleteRoute(app, {
    url,
    operationId: 'deleteTlsEdgeBackendModule',
    summary: 'Remove the backend module of a TLS edge (also when it has none); its connections are then closed.',
    tags,
    deleted: 'Removed.',
    remove: (caller, id) => edges.deleteBackend(caller, id),
  });
}
