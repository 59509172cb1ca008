import { errors } from '../../domain/errors.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 100;

export interface Paging {
  beforeId: string | undefined;
  limit: number;
}

/**
 * SPEC §6 and §3.1: `limit` is `^[1-9][0-9]*$` up to 100; `beforeId` is the npm client's
 * spelling of `before_id`; an empty `before_id` is absent (the .NET client sends one).
 */
export function parsePaging(query: Record<string, string | undefined>): Paging {
  const snake = query.before_id === '' ? undefined : query.before_id;
  const camel = query.beforeId === '' ? undefined : query.beforeId;
  if (snake !== undefined && camel !== undefined) throw errors.repeatedQueryParameter('before_id');
  const rawLimit = query.limit;
  let limit = DEFAULT_PAGE_SIZE;
  if (rawLimit !== undefined) {
    if (!/^[1-9][0-9]{0,2}$/.test(rawLimit) || Number(rawLimit) > MAX_PAGE_SIZE) throw errors.invalidLimit(rawLimit);
    limit = Number(rawLimit);
  }
  return { beforeId: snake ?? camel, limit };
}

/** `<list uri>?before_id=<last id>&limit=<limit>` when older items exist, else null. */
export function nextPageUri(listUri: string, lastId: string | undefined, hasMore: boolean, limit: number): string | null {
  if (!hasMore || lastId === undefined) return null;
  return `${listUri}?before_id=${encodeURIComponent(lastId)}&limit=${limit}`;
}
