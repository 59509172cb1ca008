import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiKeyService } from '../../domain/api-keys/service.js';
import type { ApiKeyResource } from '../../domain/api-keys/types.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { deleteRoute, getRoute, listRoute } from '../common/resource-routes.js';
import { IdParams, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { ApiKeyListResponse, ApiKeyRef, CreateApiKeyBody, UpdateApiKeyBody } from './schemas.js';
import { presentDescribed } from '../common/present.js';

export interface ApiKeyRouteDeps {
  apiKeys: ApiKeyService;
  publicUrl: string | undefined;
}

const tags = ['API Keys'];

/** CONSOLE.md §2: the reference API's /api_keys, over the rows the CLI manages too. */
export async function apiKeyRoutes(fastify: FastifyInstance, deps: ApiKeyRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { apiKeys, publicUrl } = deps;

  app.post(
    '/api_keys',
    {
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key. The key itself (token) is in this answer only.',
        tags,
        security,
        body: CreateApiKeyBody,
        response: {
          201: ApiKeyRef,
          ...commonErrors,
          ...bodyErrors,
          403: errorResponse('owner_id names someone else and the caller is not an admin (ERR_NGROK_630).'),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const { key, token } = await apiKeys.create(request.principal, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        ownerId: body.owner_id ?? undefined,
      });
      const shaped = present(key, baseUrl(request, publicUrl), token);
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  getRoute(app, {
    url: '/api_keys/:id',
    operationId: 'getApiKey',
    summary: 'Get an API key (its token is null). Non-admins see only their own keys.',
    tags,
    response: ApiKeyRef,
    get: (caller, id) => apiKeys.get(caller, id),
    present,
    publicUrl,
  });

  listRoute(app, {
    url: '/api_keys',
    field: 'keys',
    operationId: 'listApiKeys',
    summary: 'List the API keys: every key of the account for an admin, the caller’s own otherwise; newest first.',
    tags,
    response: ApiKeyListResponse,
    list: (caller, beforeId, limit) => apiKeys.list(caller, beforeId, limit),
    present,
    publicUrl,
  });

  app.patch(
    '/api_keys/:id',
    {
      schema: {
        operationId: 'updateApiKey',
        summary: 'Update description or metadata; absent or null fields stay as they are.',
        tags,
        security,
        params: IdParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKeyRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      if (body.id != null && body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
      const updated = await apiKeys.update(request.principal, id, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
      });
      return present(updated, baseUrl(request, publicUrl));
    },
  );

  deleteRoute(app, {
    url: '/api_keys/:id',
    operationId: 'deleteApiKey',
    summary: 'Revoke an API key: it stops authenticating within a second, and its console sessions end.',
    tags,
    deleted: 'Revoked.',
    remove: (caller, id) => apiKeys.delete(caller, id),
  });
}

function present(key: ApiKeyResource, base: string, token: string | null = null) {
  return {
    ...presentDescribed(key, `${base}/api_keys/${key.id}`),
    token,
    owner_id: key.ownerId,
  };
}
