import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Credential } from '../../domain/credentials/types.js';
import type { CredentialService } from '../../domain/credentials/service.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { deleteRoute, getRoute, listRoute } from '../common/resource-routes.js';
import { uris } from '../common/refs.js';
import { IdParams, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { CreateCredentialBody, CredentialListResponse, CredentialRef, UpdateCredentialBody } from './schemas.js';
import { presentDescribed } from '../common/present.js';

export interface CredentialRouteDeps {
  credentials: CredentialService;
  publicUrl: string | undefined;
}

const tags = ['Tunnel Credentials'];

export async function credentialRoutes(fastify: FastifyInstance, deps: CredentialRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { credentials, publicUrl } = deps;

  app.post(
    '/credentials',
    {
      schema: {
        operationId: 'createCredential',
        summary: 'Create a tunnel authtoken credential. The token is in this answer only.',
        tags,
        security,
        body: CreateCredentialBody,
        response: {
          201: CredentialRef,
          ...commonErrors,
          ...bodyErrors,
          403: errorResponse('owner_id names someone else and the caller is not an admin (ERR_NGROK_630).'),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const { credential, token } = await credentials.create(request.principal, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        acl: body.acl ?? undefined,
        ownerId: body.owner_id ?? undefined,
      });
      const shaped = present(credential, baseUrl(request, publicUrl), token);
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  getRoute(app, {
    url: '/credentials/:id',
    operationId: 'getCredential',
    summary: 'Get a tunnel credential (its token is null).',
    tags,
    response: CredentialRef,
    get: (caller, id) => credentials.get(caller, id),
    present,
    publicUrl,
  });

  listRoute(app, {
    url: '/credentials',
    field: 'credentials',
    operationId: 'listCredentials',
    summary: 'List the tunnel credentials of the account, newest first.',
    tags,
    response: CredentialListResponse,
    list: (caller, beforeId, limit) => credentials.list(caller, beforeId, limit),
    present,
    publicUrl,
  });

  app.patch(
    '/credentials/:id',
    {
      schema: {
        operationId: 'updateCredential',
        summary: 'Update description, metadata or acl; absent or null fields stay as they are.',
        tags,
        security,
        params: IdParams,
        body: UpdateCredentialBody,
        response: { 200: CredentialRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      if (body.id != null && body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
      const updated = await credentials.update(request.principal, id, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        acl: body.acl ?? undefined,
      });
      return present(updated, baseUrl(request, publicUrl));
    },
  );

  deleteRoute(app, {
    url: '/credentials/:id',
    operationId: 'deleteCredential',
    summary: 'Delete a tunnel credential; its token stops working at once.',
    tags,
    deleted: 'Deleted.',
    remove: (caller, id) => credentials.delete(caller, id),
  });
}

/** The wire shape of SPEC §5.1: empty description and metadata are left out. */
function present(credential: Credential, base: string, token: string | null = null) {
  return {
    ...presentDescribed(credential, uris.credential(base, credential.id)),
    token,
    acl: [...credential.acl],
    owner_id: credential.ownerId,
  };
}
