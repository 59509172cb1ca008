import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Credential } from '../../domain/credentials/types.js';
import type { CredentialService } from '../../domain/credentials/service.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { nextPageUri, parsePaging } from '../common/paging.js';
import { IdParams, PagingQuery, bodyErrors, commonErrors, errorResponse, security } from '../common/schemas.js';
import { CreateCredentialBody, CredentialListResponse, CredentialRef, UpdateCredentialBody } from './schemas.js';

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

  app.get(
    '/credentials/:id',
    {
      schema: {
        operationId: 'getCredential',
        summary: 'Get a tunnel credential (its token is null).',
        tags,
        security,
        params: IdParams,
        response: { 200: CredentialRef, ...commonErrors },
      },
    },
    async (request) => present(await credentials.get(request.principal, request.params.id), baseUrl(request, publicUrl)),
  );

  app.get(
    '/credentials',
    {
      schema: {
        operationId: 'listCredentials',
        summary: 'List the tunnel credentials of the account, newest first.',
        tags,
        security,
        querystring: PagingQuery,
        response: { 200: CredentialListResponse, ...commonErrors },
      },
    },
    async (request) => {
      const { beforeId, limit } = parsePaging(request.query);
      const page = await credentials.list(request.principal, beforeId, limit);
      const base = baseUrl(request, publicUrl);
      const uri = `${base}/credentials`;
      return {
        credentials: page.items.map((credential) => present(credential, base)),
        uri,
        next_page_uri: nextPageUri(uri, page.items.at(-1)?.id, page.hasMore, limit),
      };
    },
  );

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

  app.delete(
    '/credentials/:id',
    {
      schema: {
        operationId: 'deleteCredential',
        summary: 'Delete a tunnel credential; its token stops working at once.',
        tags,
        security,
        params: IdParams,
        response: { 204: { type: 'null', description: 'Deleted.' }, ...commonErrors },
      },
    },
    async (request, reply) => {
      await credentials.delete(request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}

/** The wire shape of SPEC §5.1: empty description and metadata are left out. */
function present(credential: Credential, base: string, token: string | null = null) {
  return {
    id: credential.id,
    uri: `${base}/credentials/${credential.id}`,
    created_at: credential.createdAt,
    description: credential.description === '' ? undefined : credential.description,
    metadata: credential.metadata === '' ? undefined : credential.metadata,
    token,
    acl: [...credential.acl],
    owner_id: credential.ownerId,
  };
}
