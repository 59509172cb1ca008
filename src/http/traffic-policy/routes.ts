import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { HttpDecision } from '../../domain/policy/index.js';
import { headerMap, tryPolicy } from '../../domain/policy/policy-trial.js';
import { describeTestConnection } from '../../domain/policy/test-connection.js';
import { bodyErrors, commonErrors, security } from '../common/schemas.js';
import { PolicyTestBody, PolicyTestResponse } from './schemas.js';

export interface PolicyTestRouteDeps {
  maxPolicyRules: number;
  region: string;
}

/**
 * burrow's extension of the reference API (docs/DECISIONS.md): HTTP-POLICY.md §6's policy test,
 * the engine `burrow policy test` runs, for the console's "try it" form. Reads and writes nothing.
 */
export async function policyTestRoutes(fastify: FastifyInstance, deps: PolicyTestRouteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/traffic_policy/test',
    {
      schema: {
        operationId: 'testTrafficPolicy',
        summary: 'Run a traffic policy on one connection, and optionally one HTTP request and its answer, without an endpoint: every rule and action as it ran, the request the agent would get, the answer the client would get.',
        tags: ['Traffic Policy'],
        security,
        body: PolicyTestBody,
        response: { 200: PolicyTestResponse, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => {
      const body = request.body;
      const trial = await tryPolicy(
        {
          policy: body.policy,
          ...(body.connection ? { connection: withoutNulls(body.connection) } : {}),
          ...(body.request ? { request: withoutNulls(body.request) } : {}),
          ...(body.response ? { response: withoutNulls(body.response) } : {}),
        },
        { maxRules: deps.maxPolicyRules, region: deps.region, callerIp: request.ip, now: Date.now() },
      );
      const { verdict, http } = trial;
      return {
        allowed: http ? http.allowed : verdict.allowed,
        connection: describeTestConnection(trial.connection),
        on_tcp_connect: {
          rules: verdict.rules.map((rule) => ({ rule: rule.rule, name: rule.name, matched: rule.matched, error: rule.error ?? null, actions: rule.actions })),
          closed_by: verdict.closedBy ?? null,
          errors: verdict.errors,
        },
        on_http_request: http ? phase(http.request) : null,
        on_http_response: http?.response ? phase(http.response) : null,
        forwarded: http?.forwarded ? { method: http.forwarded.method, path: http.forwarded.target, headers: headerMap(http.forwarded.headers) } : null,
        answer: http?.answer
          ? { status: http.answer.status, headers: headerMap(http.answer.headers), body: http.answer.body ?? null, compressed: http.answer.compressed ?? null }
          : null,
        report: trial.report,
      };
    },
  );
}

function phase(decision: HttpDecision) {
  return { actions: decision.taken.map((t) => ({ rule: t.rule, type: t.type })), errors: decision.errors, logs: decision.logs, answered: decision.answer?.status ?? null };
}

/** `null` means absent (SPEC §2). */
function withoutNulls<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null)) as { [K in keyof T]: Exclude<T[K], null> };
}
