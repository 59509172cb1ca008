import { quote } from './text.js';

// Modules that quoted through this file keep working; the helper lives in text.ts.
export { quote };

/**
 * The error catalogue (SPEC §3). Every failure the API reports is an ApiError: an HTTP status,
 * the reference API's error code (absent where the SPEC has none), a message telling the caller
 * what to change, and string-valued details. The HTTP layer adds the operation id.
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorCode: string | undefined,
    message: string,
    readonly details: Readonly<Record<string, string>> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}


export const NOT_FOUND_MESSAGE = 'Resource not found';
const INTERNAL_MESSAGE = 'Internal server error';

export const errors = {
  notFound: () => new ApiError(404, undefined, NOT_FOUND_MESSAGE),

  methodNotAllowed: (method: string, allowed: readonly string[]) =>
    new ApiError(
      405,
      undefined,
      `The method ${method} is not allowed on this resource. Allowed methods: ${allowed.join(', ')}.`,
      {},
      { Allow: allowed.join(', ') },
    ),

  // Authentication (SPEC §2 step 2). Every 401 carries WWW-Authenticate.
  authMissing: () =>
    unauthorized('ERR_NGROK_200', 'Your request is missing an Authorization header. Send "Authorization: Bearer <API key>".'),
  authNotBearer: () =>
    unauthorized(
      'ERR_NGROK_201',
      'Your Authorization header could not be parsed. It must have the form "Bearer <API key>".',
    ),
  authMalformedKey: (prefix: string) =>
    unauthorized(
      'ERR_NGROK_202',
      `The API key beginning ${quote(prefix)} is not well formed. An API key looks like "<27 characters>_<21 characters>"; copy it again in full.`,
    ),
  authUnknownKey: (prefix: string) =>
    unauthorized(
      'ERR_NGROK_203',
      `The API key beginning ${quote(prefix)} does not exist or has been revoked. Use a valid API key.`,
    ),
  authTunnelToken: (prefix: string) =>
    unauthorized(
      'ERR_NGROK_207',
      `The value beginning ${quote(prefix)} is a tunnel authtoken, not an API key. Authtokens start agents; this API needs an API key.`,
    ),

  rateLimited: (retryAfterSeconds: number) =>
    new ApiError(
      429,
      'ERR_NGROK_226',
      `You have made too many requests. Wait ${retryAfterSeconds} seconds before trying again.`,
      {},
      { 'Retry-After': String(retryAfterSeconds) },
    ),

  // Versioning (SPEC §2 step 4).
  versionMissing: () =>
    new ApiError(
      400,
      'ERR_NGROK_218',
      'Your request has not specified an API version. Please include the version you wish to use in the Service-Version header. Supported versions: 2.',
    ),
  versionUnsupported: (given: string) =>
    new ApiError(
      400,
      'ERR_NGROK_217',
      `The API version ${quote(given, 16)} is not supported. Send "Service-Version: 2" (or "Ngrok-Version: 2"); if you send both, they must agree. Supported versions: 2.`,
    ),

  // Body framing (SPEC §2 step 5).
  bodyWithoutContentType: () =>
    new ApiError(400, 'ERR_NGROK_216', 'Your request has a body but no Content-Type header. Send "Content-Type: application/json".'),
  unsupportedMediaType: (given: string) =>
    new ApiError(
      415,
      'ERR_NGROK_210',
      `The Content-Type ${quote(given)} is not supported. Send the body as JSON with "Content-Type: application/json".`,
    ),
  bodyNotAllowed: (method: string) =>
    new ApiError(400, 'ERR_NGROK_211', `A ${method} request must not have a body. Send the request without one.`),
  invalidJson: (reason: string) =>
    new ApiError(400, 'ERR_NGROK_213', `The request body is not valid JSON: ${reason}.`),
  bodyNotObject: () =>
    new ApiError(400, 'ERR_NGROK_215', 'The request body must be a JSON object.'),
  bodyTooLarge: (limitBytes: number) =>
    new ApiError(413, undefined, `The request body is larger than the limit of ${limitBytes} bytes.`),

  // Query and fields (SPEC §2 steps 6-7).
  unknownQueryParameter: (name: string, supported: readonly string[]) =>
    new ApiError(
      400,
      'ERR_NGROK_231',
      `The query parameter ${quote(name)} is not supported here. Supported parameters: ${listOrNone(supported)}.`,
      { param: truncate(name) },
    ),
  repeatedQueryParameter: (name: string) =>
    new ApiError(400, 'ERR_NGROK_232', `The query parameter ${quote(name)} was given more than once. Give it once.`, {
      param: truncate(name),
    }),
  unknownField: (name: string, supported: readonly string[]) =>
    new ApiError(
      400,
      'ERR_NGROK_214',
      `The field ${quote(name)} is not supported. Supported fields: ${listOrNone(supported)}.`,
      { param: truncate(name) },
    ),
  invalidField: (name: string, problem: string) =>
    new ApiError(400, 'ERR_NGROK_215', `The field ${quote(name)} ${problem}${problem.endsWith('.') ? '' : '.'}`, { param: name }),

  // Resource rules (SPEC §3 table).
  invalidAcl: (message: string) => new ApiError(400, 'ERR_NGROK_600', message, { param: 'acl' }),
  /** SPEC §5.1: description (604) and metadata (605) limits count UTF-8 bytes. */
  textTooLong: (field: 'description' | 'metadata', bytes: number, limit: number) =>
    new ApiError(
      400,
      field === 'description' ? 'ERR_NGROK_604' : 'ERR_NGROK_605',
      `The ${field} is ${bytes} bytes long; the limit is ${limit} bytes of UTF-8. Shorten it.`,
      { param: field },
    ),
  ownerNotPermitted: (noun: 'credential' | 'API key' = 'credential') =>
    new ApiError(
      403,
      'ERR_NGROK_630',
      `Only an admin may set owner_id to someone else. Leave owner_id out to own the ${noun} yourself.`,
      { param: 'owner_id' },
    ),
  ownerUnknown: (ownerId: string) =>
    new ApiError(
      400,
      'ERR_NGROK_634',
      `The owner_id ${quote(ownerId)} is not a user or bot of this account. Use the id of an active user or bot.`,
      { param: 'owner_id' },
    ),
  invalidLimit: (given: string) =>
    new ApiError(
      400,
      'ERR_NGROK_244',
      `The limit ${quote(given, 16)} is not valid. Give a whole number from 1 to 100 without signs or leading zeros.`,
      { param: 'limit' },
    ),
  invalidBeforeId: (given: string, kind: string) =>
    new ApiError(
      400,
      'ERR_NGROK_227',
      `The before_id ${quote(given)} is not a ${kind} id. Use the id of the last item of the previous page.`,
      { param: 'before_id' },
    ),
  policy: (code: string, message: string, param: string) => new ApiError(400, code, message, { param }),
  /**
   * DELETE of a tunnel group that an edge's backend module names. No code of the reference API
   * fits (SPEC §3: leave it out); 409 because the request is fine and the state is not.
   */
  tunnelGroupBackendInUse: (id: string, edgeIds: readonly string[]) =>
    new ApiError(
      409,
      undefined,
      `The tunnel group ${id} is the backend of ${edgeIds.length === 1 ? 'the TLS edge' : `${edgeIds.length} TLS edges`} ${edgeIds.slice(0, 5).join(', ')}${edgeIds.length > 5 ? ', …' : ''}. Remove their backend modules (DELETE /edges/tls/{id}/backend) or point them at another group, then delete it.`,
    ),

  // Reserved domains and addresses (CERTIFICATES.md §0), with the reference API's codes.
  domainReservedByYou: (domain: string) =>
    new ApiError(400, 'ERR_NGROK_413', `This domain is already reserved for your account. Failed to reserve ${quote(domain)}.`, { param: 'domain' }),
  domainReservedByOther: (domain: string) =>
    new ApiError(400, 'ERR_NGROK_414', `This domain is already reserved for another account. Failed to reserve ${quote(domain)}.`, { param: 'domain' }),
  wildcardCoversOther: (domain: string) =>
    new ApiError(
      400,
      'ERR_NGROK_417',
      `This wildcard domain would conflict with a domain reserved for another account. Failed to reserve ${quote(domain)}.`,
      { param: 'domain' },
    ),
  /** A TLS edge hostport whose name another account reserved: for the caller, no such hostport exists (the reference's 7111). */
  hostportReservedElsewhere: (hostport: string) =>
    new ApiError(400, 'ERR_NGROK_7111', `The edge hostport ${quote(hostport)} does not exist: its name is reserved for another account.`, { param: 'hostports' }),
  /** No code of the reference API fits (SPEC §3: leave it out); 409: the request is fine, the server's ports are not. */
  noFreeAddress: (why: string) => new ApiError(409, undefined, `No TCP address can be reserved: ${why}`),
  /** CONSOLE.md §3: no code of the reference API fits a browser session (SPEC §3: leave it out). */
  consoleSessionEnded: () =>
    unauthorized(
      undefined,
      'Your console session has ended: signed out, idle too long, or its API key was revoked. Sign in again with an API key.',
    ),
  consoleCsrfMissing: () =>
    new ApiError(403, undefined, 'A change made with a console session must carry the session\'s X-CSRF-Token header. Reload the console.'),

  // SPEC §3: every 5xx body says only this; the status and Retry-After tell a client to retry.
  /** POST /tunnel_sessions/{id}/stop|restart|update to an agent that cannot (TUNNELS.md §2). */
  agentCommandUnsupported: (command: 'stop' | 'restart' | 'update', reason: string) =>
    new ApiError(
      400,
      command === 'stop' ? 'ERR_NGROK_805' : command === 'restart' ? 'ERR_NGROK_804' : 'ERR_NGROK_806',
      `This ngrok agent does not support remote ${command === 'stop' ? 'stopping' : command === 'restart' ? 'restarting' : 'updating'}: ${reason.replace(/\.+$/, '')}.`,
    ),
  unavailable: () => new ApiError(503, undefined, INTERNAL_MESSAGE, {}, { 'Retry-After': '1' }),
  internal: () => new ApiError(500, undefined, INTERNAL_MESSAGE),
};

function unauthorized(code: string | undefined, message: string): ApiError {
  return new ApiError(401, code, message, {}, { 'WWW-Authenticate': 'Bearer' });
}

function listOrNone(items: readonly string[]): string {
  return items.length === 0 ? 'none' : items.join(', ');
}

function truncate(value: string): string {
  return value.length > 64 ? value.slice(0, 64) : value;
}
