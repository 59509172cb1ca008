import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { BackendInput, TlsEdgeService } from '../../domain/edges/service.js';
import { errors } from '../../domain/errors.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { baseUrl } from '../pipeline/base-url.js';
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
      const module = moduleOfPutBody(request.body, request.params.id);
      const field = request.body.module != null ? 'module.backend_id' : 'backend_id';
      return presentBackend(await edges.replaceBackend(request.principal, request.params.id, module, field), baseUrl(request, publicUrl));
    },
  );

  app.get(
    url,
    {
      schema: {
        operationId: 'getTlsEdgeBackendModule',
        summary: 'Get the backend module of a TLS edge; 404 when it has none.',
        tags,
        security,
        params: IdParams,
        response: { 200: BackendModuleRef, ...commonErrors },
      },
    },
    async (request) => presentBackend(await edges.getBackend(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );

  app.delete(
    url,
    {
      schema: {
        operationId: 'deleteTlsEdgeBackendModule',
        summary: 'Remove the backend module of a TLS edge (also when it has none); its connections are then closed.',
        tags,
        security,
        params: IdParams,
        response: { 204: { type: 'null', description: 'Removed.' }, ...commonErrors },
      },
    },
    async (request, reply) => {
      await edges.deleteBackend(request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}

/** The flat module (Python, docs), or the npm/Rust/Java wrapper whose id must match the path. */
function moduleOfPutBody(body: Static<typeof ReplaceBackendBody>, pathId: string): BackendInput {
  if (body.id != null && body.id !== pathId) throw errors.invalidField('id', 'must equal the id in the path');
  if (body.module != null) {
    for (const flat of ['enabled', 'backend_id'] as const) {
      if (body[flat] != null) throw errors.unknownField(flat, ['id', 'module']);
    }
    return { enabled: body.module.enabled ?? undefined, backendId: body.module.backend_id };
  }
  if (body.backend_id == null) throw errors.invalidField('backend_id', 'is required: send the id of a tunnel group backend (bkdtg_…)');
  return { enabled: body.enabled ?? undefined, backendId: body.backend_id };
}
