import Type, { type TArray, type TSchema } from 'typebox';
import { MAX_PAGE_SIZE } from './paging.js';

/** `T | null` in request bodies: SPEC §1 says null means "not provided". */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * A string whose limit counts UTF-8 bytes. JSON Schema's `maxLength` counts characters, so the
 * limit is published as `x-max-bytes` (with the sentence in the description), and `x-error-code`
 * says which SPEC code answers a longer value: the domain rule that owns the constant enforces it,
 * and the request validator leaves constraints under `x-error-code` to that rule.
 */
export const Utf8Text = (maxBytes: number, errorCode: string, description: string) =>
  Type.String({
    description: `${description} At most ${maxBytes} bytes of UTF-8 (not characters).`,
    'x-max-bytes': maxBytes,
    'x-error-code': errorCode,
  });

export const ErrorBody = Type.Object(
  {
    error_code: Type.Optional(Type.String({ description: 'Stable error code, e.g. ERR_NGROK_215. Absent where none applies.' })),
    status_code: Type.Integer({ description: 'Equals the HTTP status.' }),
    msg: Type.String({ description: 'What went wrong and what to change.' }),
    details: Type.Record(Type.String(), Type.String(), {
      description: 'Always holds operation_id; field errors add param.',
    }),
  },
  { $id: 'Error', description: 'Every error answer has this shape (SPEC §3).' },
);

export const errorResponse = (description: string) => ({ ...Type.Ref('Error'), description });

/** Error answers every authenticated operation can give. */
export const commonErrors = {
  400: errorResponse('Bad request: version header, body framing, query or field errors.'),
  401: errorResponse('Missing, malformed, unknown or revoked API key.'),
  404: errorResponse('Unknown route or resource.'),
  405: errorResponse('Known path, method not allowed (see the Allow header).'),
  429: errorResponse('Rate limited; see Retry-After.'),
  500: errorResponse('Internal server error.'),
  503: errorResponse('Database unavailable; try again.'),
};

export const bodyErrors = {
  413: errorResponse('Request body larger than 1 MiB.'),
  415: errorResponse('Content-Type is not application/json.'),
};

export const IdParams = Type.Object({ id: Type.String({ description: 'Resource id.' }) });

export const PagingQuery = Type.Object({
  before_id: Type.Optional(Type.String({ description: 'Only items with a smaller (older) id.' })),
  beforeId: Type.Optional(Type.String({ description: 'Alias of before_id (sent by the npm client).', deprecated: true })),
  limit: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]*$',
      'x-maximum': MAX_PAGE_SIZE,
      'x-error-code': 'ERR_NGROK_244',
      description: `Page size, a decimal string from 1 to ${MAX_PAGE_SIZE} (default ${MAX_PAGE_SIZE}).`,
    }),
  ),
});

export const security = [{ bearerAuth: [] }];

/** A page of a list (SPEC §6): the items under the resource's own key, then `uri` and `next_page_uri`. */
export const ListPage = <K extends string, T extends TSchema>(key: K, item: T) =>
  Type.Object({
    ...({ [key]: Type.Array(item) } as { [P in K]: TArray<T> }),
    uri: Type.String(),
    next_page_uri: Type.Union([Type.String(), Type.Null()]),
  });
