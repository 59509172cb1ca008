import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { InspectionService } from '../../domain/inspection/service.js';
import type { InspectedRequest, InspectionSettings } from '../../domain/inspection/types.js';
import { nextPageUri, parsePaging } from '../common/paging.js';
import { IdParams, PagingQuery, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { baseUrl } from '../pipeline/base-url.js';
import { InspectedRequestListResponse, InspectionSettingsResponse, RequestParams, UpdateInspectionSettingsBody } from './schemas.js';

export interface InspectionRouteDeps {
  inspection: InspectionService;
  publicUrl: string | undefined;
}

const tags = ['Traffic Inspection'];

/** CONSOLE.md §2: the account's capture settings and each endpoint's captured requests. */
export async function inspectionRoutes(fastify: FastifyInstance, deps: InspectionRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { inspection, publicUrl } = deps;

  app.get(
    '/traffic_inspection',
    { schema: { operationId: 'getTrafficInspection', summary: 'The account’s capture settings.', tags, security, response: { 200: InspectionSettingsResponse, ...commonErrors } } },
    async (request) => presentSettings(await inspection.settings(request.principal)),
  );

  app.patch(
    '/traffic_inspection',
    {
      schema: {
        operationId: 'updateTrafficInspection',
        summary: 'Change capture settings; absent or null fields stay as they are.',
        tags,
        security,
        body: UpdateInspectionSettingsBody,
        response: { 200: InspectionSettingsResponse, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const body = request.body;
      const updated = await inspection.updateSettings(request.principal, {
        ...(body.capture != null ? { capture: body.capture } : {}),
        ...(body.body_limit_bytes != null ? { bodyLimitBytes: body.body_limit_bytes } : {}),
        ...(body.redact_secrets != null ? { redactSecrets: body.redact_secrets } : {}),
      });
      return presentSettings(updated);
    },
  );

  app.get(
    '/endpoints/:id/requests',
    {
      schema: {
        operationId: 'listEndpointRequests',
        summary: 'The requests captured on an endpoint, newest first (the last INSPECTION_KEEP).',
        tags,
        security,
        params: IdParams,
        querystring: PagingQuery,
        response: { 200: InspectedRequestListResponse, ...commonErrors },
      },
    },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await inspection.list(request.principal, request.params.id, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}/endpoints/${request.params.id}/requests`;
      return { requests: page.items.map((item) => present(item, base)), uri, next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit) };
    },
  );

  app.get(
    '/endpoints/:id/requests/:rid',
    {
      schema: {
        operationId: 'getEndpointRequest',
        summary: 'One captured request with its answer.',
        tags,
        security,
        params: RequestParams,
        response: { 200: { $ref: 'InspectedRequest' }, ...commonErrors },
      },
    },
    async (request) => present(await inspection.get(request.principal, request.params.id, request.params.rid), baseUrl(request, publicUrl)),
  );
}

function presentSettings(settings: InspectionSettings) {
  return { capture: settings.capture, body_limit_bytes: settings.bodyLimitBytes, redact_secrets: settings.redactSecrets };
}

function present(item: InspectedRequest, base: string) {
  return {
    id: item.id,
    uri: `${base}/endpoints/${item.endpointId}/requests/${item.id}`,
    created_at: item.createdAt,
    method: item.method,
    path: item.path,
    status: item.status,
    duration_ms: item.durationMs,
    client_ip: item.clientIp,
    request_headers: item.requestHeaders,
    response_headers: item.responseHeaders,
    actions: [...item.actions],
    request_body: item.requestBody,
    response_body: item.responseBody,
  };
}
