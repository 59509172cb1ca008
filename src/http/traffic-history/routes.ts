import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import type { TrafficHistoryService } from '../../domain/traffic-history/service.js';
import { commonErrors, security } from '../common/schemas.js';

const perMinute = (description: string) => Type.Array(Type.Integer(), { description: `${description}, one value per minute of \`times\`.` });

const TrafficHistoryResponse = Type.Object({
  step_seconds: Type.Integer({ description: 'Always 60.' }),
  times: Type.Array(Type.Integer(), { description: 'The start of each minute (Unix seconds), oldest first; the last is the current, partial minute.' }),
  connections: perMinute('Public connections ended'),
  requests: perMinute('HTTP requests through endpoints and edges'),
  bytes_in: perMinute('Bytes from public clients'),
  bytes_out: perMinute('Bytes to public clients'),
  denials: Type.Record(Type.String(), perMinute('Denials by this action'), {
    description: 'By action: connections closed by a policy (deny, restrict-ips, ip-restriction, …) and HTTP requests answered by deny.',
  }),
  instances: Type.Integer({ description: 'Instances whose counts are summed here.' }),
});

/**
 * burrow's extension of the reference API (CONSOLE.md §2, docs/DECISIONS.md): the last hour of
 * the server's traffic, per minute, summed over every instance, for the console's overview charts.
 */
export async function trafficHistoryRoutes(fastify: FastifyInstance, deps: { history: TrafficHistoryService }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/traffic_history',
    {
      schema: {
        operationId: 'getTrafficHistory',
        summary: 'The last hour of traffic per minute, summed over every instance (each writes its counts every 10 s).',
        tags: ['Traffic Inspection'],
        security,
        response: { 200: TrafficHistoryResponse, ...commonErrors },
      },
    },
    async () => {
      const hour = await deps.history.lastHour(Date.now());
      return {
        step_seconds: 60,
        times: hour.times,
        connections: hour.connections,
        requests: hour.requests,
        bytes_in: hour.bytesIn,
        bytes_out: hour.bytesOut,
        denials: hour.denials,
        instances: hour.instances,
      };
    },
  );
}
