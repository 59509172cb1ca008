import Type from 'typebox';
import { formatTimestamp } from '../../domain/ids.js';

/** `{id, uri}`: how one object of the API names another. */
export const Ref = Type.Object({
  id: Type.String(),
  uri: Type.String({ description: 'Absolute URL of the object; empty where burrow serves no such resource.' }),
});

export function ref(id: string, uri: string): { id: string; uri: string } {
  return { id, uri };
}

/**
 * SPEC §1 timestamps (UTC, whole seconds) from a stored ISO 8601 time: the data plane records
 * its times with milliseconds.
 */
export function wireTime(stored: string): string {
  const ms = Date.parse(stored);
  return Number.isNaN(ms) ? stored : formatTimestamp(Math.floor(ms / 1000));
}
