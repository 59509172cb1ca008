import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { Principal } from '../../domain/accounts/types.js';
import type { Authenticator } from '../../domain/auth.js';
import { errors } from '../../domain/errors.js';
import type { RateLimiter } from '../../domain/rate-limit.js';
import { checkHostHeader } from './base-url.js';
import { compileBodyValidator, compileQueryValidator, type RawQuery } from './validation.js';

export interface GateOptions {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  /** SPEC §2 step 1 (from routing.ts). */
  checkRoute: (request: FastifyRequest) => void;
  /** Whether the Host header builds uri fields (no PUBLIC_URL). */
  hostMakesUris: boolean;
  /** The console's session cookie, tried when there is no Authorization header (undefined: none). */
  sessionAuth?: ((request: FastifyRequest) => Promise<Principal> | undefined) | undefined;
}

/**
 * The one onRequest hook: SPEC §2 steps 1-4 in order (route, authentication, rate limit,
 * version), plus the Host check. Written in callback style and synchronous while the API key is
 * cached, because it runs on every request.
 */
export function registerRequestGate(app: FastifyInstance, options: GateOptions): void {
  const { authenticator, rateLimiter, checkRoute, hostMakesUris, sessionAuth } = options;
  app.decorateRequest('principal', null as unknown as Principal);

  const admit = (request: FastifyRequest, principal: Principal) => {
    request.principal = principal;
    const wait = rateLimiter.consume(principal.accountId);
    if (wait > 0) throw errors.rateLimited(wait);
    checkVersion(request);
  };

  app.addHook('onRequest', (request, reply, done) => {
    try {
      checkRoute(request);
      checkHostHeader(request, hostMakesUris);
      dropContentTypeOfEmptyBody(request);
      if (request.routeOptions.config.public) return done();
      const header = request.headers.authorization;
      const principal = (header === undefined ? sessionAuth?.(request) : undefined) ?? authenticator.authenticate(header);
      if (!(principal instanceof Promise)) {
        admit(request, principal);
        return done();
      }
      principal.then(
        (found) => {
          try {
            admit(request, found);
            done();
          } catch (error) {
            done(error as Error);
          }
        },
        (error: Error) => done(error),
      );
    } catch (error) {
      done(error as Error);
    }
  });
}

function checkVersion(request: FastifyRequest): void {
  const serviceVersion = request.headers['service-version'];
  const ngrokVersion = request.headers['ngrok-version'];
  if (serviceVersion === undefined && ngrokVersion === undefined) throw errors.versionMissing();
  for (const value of [serviceVersion, ngrokVersion]) {
    if (value !== undefined && value !== '2') throw errors.versionUnsupported(String(value));
  }
}

/**
 * With no body there is nothing to frame: a Content-Type alone (the npm client sends one on
 * every request) must neither be parsed nor rejected as an unknown media type.
 */
function dropContentTypeOfEmptyBody(request: FastifyRequest): void {
  const headers = request.headers;
  if (headers['content-type'] === undefined || headers['transfer-encoding'] !== undefined) return;
  const length = headers['content-length'];
  if (length === undefined || length === '0') delete headers['content-type'];
}

/**
 * Attaches SPEC §2 steps 5-7 that come after parsing to every route: a GET with a body, then
 * the query string, then the body fields, all before the handler looks anything up.
 */
export function attachRequestValidation(route: RouteOptions): void {
  const schema = route.schema as { querystring?: TSchema; body?: TSchema } | undefined;
  if (route.config?.public) return;
  const validateQuery = compileQueryValidator(schema?.querystring);
  const validateBody = schema?.body ? compileBodyValidator(schema.body) : undefined;
  const methods = [route.method].flat();
  const bodyless = methods.every((method) => method === 'GET' || method === 'HEAD');

  const checkFields = (request: FastifyRequest) => {
    request.query = validateQuery(request.query as RawQuery);
    if (validateBody) request.body = validateBody(request.body);
  };
  // Callback style, and synchronous unless a chunked GET body must be looked at: every request
  // passes here.
  const validate = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    try {
      const body = bodyless ? hasBody(request) : false;
      if (body === false) {
        checkFields(request);
        return done();
      }
      if (body === true) throw errors.bodyNotAllowed(request.method);
      body.then((nonEmpty) => {
        try {
          if (nonEmpty) throw errors.bodyNotAllowed(request.method);
          checkFields(request);
          done();
        } catch (error) {
          done(error as Error);
        }
      }, done);
    } catch (error) {
      done(error as Error);
    }
  };
  route.preValidation = [validate, ...[route.preValidation ?? []].flat()];
}

/**
 * Fastify never reads a GET body. A Content-Length tells; a chunked body may still be empty,
 * so its first chunk (or its end) is awaited.
 */
function hasBody(request: FastifyRequest): boolean | Promise<boolean> {
  const length = request.headers['content-length'];
  if (length !== undefined && length !== '0') return true;
  if (request.headers['transfer-encoding'] === undefined) return false;
  const raw = request.raw;
  if (raw.readableEnded) return false;
  return new Promise((resolve) => {
    const done = (nonEmpty: boolean) => {
      raw.off('data', onData).off('end', onEnd).off('error', onEnd).off('close', onEnd);
      resolve(nonEmpty);
    };
    const onData = (chunk: Buffer) => done(chunk.length > 0);
    const onEnd = () => done(false);
    // 'close' too: a request destroyed before its end would otherwise leave this waiting forever.
    raw.on('data', onData).on('end', onEnd).on('error', onEnd).on('close', onEnd);
  });
}

export function registerValidationOnRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', attachRequestValidation);
}
