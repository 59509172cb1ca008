/**
 * Trying a policy offline (HTTP-POLICY.md §6): one connection, and optionally one HTTP request and
 * the agent's answer, through every phase with the engine the data plane runs. The one use case
 * behind `burrow policy test` and `POST /traffic_policy/test`.
 */
import type { PolicyConnection } from './activation.js';
import { CircuitBreakers } from './circuit-breakers.js';
import { evaluate, type Verdict } from './evaluate.js';
import { evaluateHttpRequest, evaluateHttpResponse, settleDecision, type HttpDecision } from './http-evaluate.js';
import { compilePolicy, type PolicyProgram } from './program.js';
import { RateBuckets } from './rate-buckets.js';
import type { PolicyError } from './types.js';
import type { HttpTestInput } from './http-test-input.js';
import { JwksCache } from '../identity/jwt-keys.js';
import { JwtVerifier } from '../identity/jwt-verify.js';

export { httpTestInput, METHOD_TOKEN, type HttpTestInput } from './http-test-input.js';

export interface HttpTestResult {
  /** True when the request reaches the agent. */
  allowed: boolean;
  request: HttpDecision;
  response: HttpDecision | undefined;
  /** The request as the agent gets it, or undefined when it never reaches it. */
  forwarded: { method: string; target: string; headers: string[] } | undefined;
  answer: { status: number; headers: string[]; body?: string; compressed?: string } | undefined;
}

/**
 * How a trial settles `jwt-validation`: the CLI fetches the key sets as the data plane does; without
 * one (the API) inline keys verify and key set URLs are not fetched.
 */
export type JwtCheck = Parameters<typeof settleDecision>[1];

export type PolicyTestOutcome =
  | { ok: false; error: PolicyError }
  | { ok: true; program: PolicyProgram; verdict: Verdict; http: HttpTestResult | undefined };

/**
 * Compiles the document as the kind of endpoint the request reaches (a TLS edge's module without
 * one), evaluates the connection, and, when it is allowed and a request is given, its HTTP phases.
 */
export async function testPolicy(source: string, maxRules: number, connection: PolicyConnection, http: HttpTestInput | undefined, verifyJwt?: JwtCheck): Promise<PolicyTestOutcome> {
  const kind = http ? { endpoint: http.scheme, subject: 'endpoint' as const } : {};
  const compiled = compilePolicy(source, { maxRules, ...kind });
  if (!compiled.ok) return { ok: false, error: compiled.error };
  const verdict = evaluate(compiled.program, connection);
  const result = http && verdict.allowed ? await runHttpTest(compiled.program, connection, http, verifyJwt) : undefined;
  return { ok: true, program: compiled.program, verdict, http: result };
}

/** Runs the HTTP phases as the data plane does (tunnels/public/http-policy.ts), with fresh rate-limit and breaker state. */
export async function runHttpTest(program: PolicyProgram, connection: PolicyConnection, input: HttpTestInput, verifyJwt?: JwtCheck): Promise<HttpTestResult> {
  const now = Number(connection.now);
  const context = {
    connection,
    request: { method: input.method, target: input.target, version: '1.1', scheme: input.scheme, headers: input.headers, receivedAt: now, ...(input.body ? { body: input.body } : {}) },
    buckets: new RateBuckets(),
    breakers: new CircuitBreakers(),
  };
  const request = await settleDecision(evaluateHttpRequest(program, context), verifyJwt ?? unfetchedKeys());
  const forwarded = request.answer ? undefined : { method: input.method, target: request.target, headers: request.headers };
  const made = request.answer;
  const given = made ?? input.response;
  if (!given) return { allowed: true, request, response: undefined, forwarded, answer: undefined };
  const response = evaluateHttpResponse(program, context, { headers: request.headers, target: request.target }, { status: given.status, headers: given.headers }, request.vars);
  const final = response.answer ?? { status: given.status, headers: response.headers, body: made?.body };
  const answer = { status: final.status, headers: final.headers, ...(final.body !== undefined ? { body: final.body } : {}), ...(response.compress ? { compressed: response.compress } : {}) };
  return { allowed: made === undefined, request, response, forwarded, answer };
}

/** The API's trial: inline keys verify; a key set URL is never fetched (a caller must not make the server fetch URLs), so it counts as unserved. */
function unfetchedKeys(): JwtCheck {
  const verifier = new JwtVerifier(new JwksCache(async () => Promise.reject(new Error("the API's policy test fetches no key set"))));
  return (config, tokens) => verifier.verify(config, tokens);
}
