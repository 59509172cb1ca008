import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { CertificatePolicyInput, ReservedDomainService, ReservedDomainView } from '../../domain/reservations/domains.js';
import { errors } from '../../domain/errors.js';
import { baseUrl } from '../pipeline/base-url.js';
import { deleteRoute, getRoute, listRoute } from '../common/resource-routes.js';
import { uris } from '../common/refs.js';
import { IdParams, bodyErrors, commonErrors, security } from '../common/schemas.js';
import { CreateReservedDomainBody, ReservedDomainListResponse, ReservedDomainRef, UpdateReservedDomainBody } from './schemas.js';
import { presentDescribed } from '../common/present.js';

export interface ReservedDomainRouteDeps {
  reservedDomains: ReservedDomainService;
  publicUrl: string | undefined;
}

const tags = ['Reserved Domains'];

export async function reservedDomainRoutes(fastify: FastifyInstance, deps: ReservedDomainRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { reservedDomains, publicUrl } = deps;

  app.post(
    '/reserved_domains',
    {
      schema: {
        operationId: 'createReservedDomain',
        summary: 'Reserve a domain (or a wildcard): only this account may bind it, online or not.',
        tags,
        security,
        body: CreateReservedDomainBody,
        response: { 201: ReservedDomainRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      checkResolvesTo(body.resolves_to);
      const created = await reservedDomains.create(request.principal, {
        domain: body.domain ?? undefined,
        region: body.region ?? undefined,
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        certificateId: body.certificate_id ?? undefined,
        certificatePolicy: policyInput(body.certificate_management_policy),
      });
      const shaped = present(created, baseUrl(request, publicUrl));
      return reply.code(201).header('Location', shaped.uri).send(shaped);
    },
  );

  getRoute(app, {
    url: '/reserved_domains/:id',
    operationId: 'getReservedDomain',
    summary: 'Get a reserved domain.',
    tags,
    response: ReservedDomainRef,
    get: (caller, id) => reservedDomains.get(caller, id),
    present,
    publicUrl,
  });

  listRoute(app, {
    url: '/reserved_domains',
    field: 'reserved_domains',
    operationId: 'listReservedDomains',
    summary: 'List the reserved domains of the account, newest first.',
    tags,
    response: ReservedDomainListResponse,
    list: (caller, beforeId, limit) => reservedDomains.list(caller, beforeId, limit),
    present,
    publicUrl,
  });

  app.patch(
    '/reserved_domains/:id',
    {
      schema: {
        operationId: 'updateReservedDomain',
        summary: 'Update description, metadata or the certificate management policy; absent or null fields stay as they are.',
        tags,
        security,
        params: IdParams,
        body: UpdateReservedDomainBody,
        response: { 200: ReservedDomainRef, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      if (body.id != null && body.id !== id) throw errors.invalidField('id', 'must equal the id in the path');
      checkResolvesTo(body.resolves_to);
      const updated = await reservedDomains.update(request.principal, id, {
        description: body.description ?? undefined,
        metadata: body.metadata ?? undefined,
        certificateId: body.certificate_id ?? undefined,
        certificatePolicy: policyInput(body.certificate_management_policy),
      });
      return present(updated, baseUrl(request, publicUrl));
    },
  );

  deleteRoute(app, {
    url: '/reserved_domains/:id',
    operationId: 'deleteReservedDomain',
    summary: 'Delete a reserved domain: the name is first-come again.',
    tags,
    deleted: 'Deleted.',
    remove: (caller, id) => reservedDomains.delete(caller, id),
  });

  deleteRoute(app, {
    url: '/reserved_domains/:id/certificate_management_policy',
    operationId: 'deleteReservedDomainCertificateManagementPolicy',
    summary: 'Detach the certificate management policy of a reserved domain.',
    tags,
    deleted: 'Detached (also when there was none).',
    remove: (caller, id) => reservedDomains.removeCertificatePolicy(caller, id),
  });

  deleteRoute(app, {
    url: '/reserved_domains/:id/certificate',
    operationId: 'deleteReservedDomainCertificate',
    summary: 'Detach the certificate of a reserved domain (burrow attaches none, so this changes nothing).',
    tags,
    deleted: 'Detached (there was none).',
    remove: (caller, id) => reservedDomains.removeCertificate(caller, id),
  });
}

/** The clients send `resolves_to` (null or [] for global resolution); burrow has one region to resolve to. */
function checkResolvesTo(resolvesTo: readonly unknown[] | null | undefined): void {
  if (resolvesTo != null && resolvesTo.length > 0) throw errors.invalidField('resolves_to', 'is not served: burrow has one region; leave it out or give []');
}

function policyInput(policy: { authority?: string | null; private_key_type?: string | null } | null | undefined): CertificatePolicyInput | undefined {
  if (policy == null) return undefined;
  return { authority: policy.authority ?? undefined, privateKeyType: policy.private_key_type ?? undefined };
}

/** The reference API's shape: empty description and metadata are left out. */
function present(reserved: ReservedDomainView, base: string) {
  const policy = reserved.certificatePolicy;
  const status = reserved.certificateStatus;
  const job = status?.provisioningJob ?? null;
  return {
    ...presentDescribed(reserved, uris.reservedDomain(base, reserved.id)),
    domain: reserved.domain,
    region: reserved.region,
    cname_target: reserved.cnameTarget,
    certificate: null,
    certificate_management_policy: policy && { authority: policy.authority, private_key_type: policy.privateKeyType },
    certificate_management_status: status && {
      renews_at: status.renewsAt,
      provisioning_job: job && { error_code: job.errorCode, msg: job.msg, started_at: job.startedAt, retries_at: job.retriesAt },
    },
    acme_challenge_cname_target: null,
  };
}
