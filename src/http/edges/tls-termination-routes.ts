import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { TlsEdgeService, TlsTerminationInput } from '../../domain/edges/service.js';
import { errors } from '../../domain/errors.js';
import { deleteRoute, getRoute } from '../common/resource-routes.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { presentTermination } from './present.js';
import { ReplaceTlsTerminationBody, TlsTerminationModuleRef, type TlsTerminationModuleBody } from './schemas.js';

const tags = ['TLS Edge TLS Termination Module'];
const FLAT_FIELDS = ['enabled', 'terminate_at', 'min_version'] as const;

export function terminationInput(module: Static<typeof TlsTerminationModuleBody>): TlsTerminationInput {
  return { enabled: module.enabled ?? undefined, terminateAt: module.terminate_at ?? undefined, minVersion: module.min_version ?? undefined };
}

/**
 * `/edges/tls/{id}/tls_termination` (HTTP-POLICY.md §5), flat or wrapped as the other modules'
 * PUT (module-body.ts); every field is optional, so unlike there nothing is required.
 */
export async function tlsTerminationRoutes(fastify: FastifyInstance, deps: { edges: TlsEdgeService; publicUrl: string | undefined }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { edges, publicUrl } = deps;
  const url = '/edges/tls/:id/tls_termination';

  app.put(
    url,
    {
      schema: {
        operationId: 'replaceTlsEdgeTlsTerminationModule',
        summary: 'Replace the TLS termination module of a TLS edge. Send {"enabled","terminate_at","min_version"}, or {"id","module"}.',
        tags,
        security,
        params: IdParams,
        body: ReplaceTlsTerminationBody,
        response: { 200: TlsTerminationModuleRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { body, params } = request;
      if (body.id != null && body.id !== params.id) throw errors.invalidField('id', 'must equal the id in the path');
      if (body.module == null) return presentTermination(await edges.replaceTlsTermination(request.principal, params.id, terminationInput(body)));
      for (const flat of FLAT_FIELDS) {
        if (body[flat] != null) throw errors.unknownField(flat, ['id', 'module']);
      }
      return presentTermination(await edges.replaceTlsTermination(request.principal, params.id, terminationInput(body.module), 'module.'));
    },
  );

  getRoute(app, {
    url,
    operationId: 'getTlsEdgeTlsTerminationModule',
    summary: 'Get the TLS termination module of a TLS edge; 404 when it has none.',
    tags,
    response: TlsTerminationModuleRef,
    get: (caller, id) => edges.getTlsTermination(caller, id),
    present: presentTermination,
    publicUrl,
  });

  deleteRoute(app, {
    url,
    operationId: 'deleteTlsEdgeTlsTerminationModule',
    summary: 'Remove the TLS termination module of a TLS edge (also when it has none): TLS is passed through again.',
    tags,
    deleted: 'Removed.',
    remove: (caller, id) => edges.deleteTlsTermination(caller, id),
  });
}
