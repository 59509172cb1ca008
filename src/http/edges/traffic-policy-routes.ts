import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { TlsEdgeService, TrafficPolicyInput } from '../../domain/edges/service.js';
import { errors } from '../../domain/errors.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { presentModule } from './present.js';
import { ReplaceTrafficPolicyBody, TrafficPolicyModuleRef } from './schemas.js';

const tags = ['TLS Edge Traffic Policy Module'];

export async function trafficPolicyRoutes(fastify: FastifyInstance, deps: { edges: TlsEdgeService }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { edges } = deps;
  const url = '/edges/tls/:id/traffic_policy';

  app.put(
    url,
    {
      schema: {
        operationId: 'replaceTlsEdgeTrafficPolicyModule',
        summary: 'Replace the traffic policy module of a TLS edge. Send the module, or {"id","module"}.',
        tags,
        security,
        params: IdParams,
        body: ReplaceTrafficPolicyBody,
        response: { 200: TrafficPolicyModuleRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const module = moduleOfPutBody(request.body, request.params.id);
      const field = request.body.module != null ? 'module.value' : 'value';
      return presentModule(await edges.replaceTrafficPolicy(request.principal, request.params.id, module, field));
    },
  );

  app.get(
    url,
    {
      schema: {
        operationId: 'getTlsEdgeTrafficPolicyModule',
        summary: 'Get the traffic policy module of a TLS edge; 404 when it has none.',
        tags,
        security,
        params: IdParams,
        response: { 200: TrafficPolicyModuleRef, ...commonErrors },
      },
    },
    async (request) => presentModule(await edges.getTrafficPolicy(request.principal, request.params.id)),
  );

  app.delete(
    url,
    {
      schema: {
        operationId: 'deleteTlsEdgeTrafficPolicyModule',
        summary: 'Remove the traffic policy module of a TLS edge (also when it has none).',
        tags,
        security,
        params: IdParams,
        response: { 204: { type: 'null', description: 'Removed.' }, ...commonErrors },
      },
    },
    async (request, reply) => {
      await edges.deleteTrafficPolicy(request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}

/** SPEC §7.2: the flat module, or the npm/Rust/Java wrapper whose id must match the path. */
function moduleOfPutBody(body: Static<typeof ReplaceTrafficPolicyBody>, pathId: string): TrafficPolicyInput {
  if (body.id != null && body.id !== pathId) throw errors.invalidField('id', 'must equal the id in the path');
  if (body.module != null) {
    for (const flat of ['enabled', 'value'] as const) {
      if (body[flat] != null) throw errors.unknownField(flat, ['id', 'module']);
    }
    return { enabled: body.module.enabled ?? undefined, value: body.module.value };
  }
  if (body.value == null) throw errors.invalidField('value', 'is required: send the policy document as a string');
  return { enabled: body.enabled ?? undefined, value: body.value };
}
