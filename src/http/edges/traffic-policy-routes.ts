import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { TlsEdgeService } from '../../domain/edges/service.js';
import { deleteRoute } from '../common/resource-routes.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { moduleOfPutBody } from './module-body.js';
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
      const { enabled, value, field } = moduleOfPutBody(request.body, request.params.id, 'value', 'is required: send the policy document as a string');
      return presentModule(await edges.replaceTrafficPolicy(request.principal, request.params.id, { enabled, value }, field));
    },
  );

  // Written out rather than getRoute(): the module has no uri, so no base URL to build.
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

  deleteRoute(app, {
    url,
    operationId: 'deleteTlsEdgeTrafficPolicyModule',
    summary: 'Remove the traffic policy module of a TLS edge (also when it has none).',
    tags,
    deleted: 'Removed.',
    remove: (caller, id) => edges.deleteTrafficPolicy(caller, id),
  });
}
