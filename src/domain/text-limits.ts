import { errors } from './errors.js';
import { utf8Bytes } from './text.js';

/** SPEC §5.1: limits count UTF-8 bytes, not characters. */
export const DESCRIPTION_MAX_BYTES = 255;
export const METADATA_MAX_BYTES = 4096;

export function checkDescription(description: string): string {
  const bytes = utf8Bytes(description);
  if (bytes > DESCRIPTION_MAX_BYTES) throw errors.textTooLong('description', bytes, DESCRIPTION_MAX_BYTES);
  return description;
}

export function checkMetadata(metadata: string): string {
  const bytes = utf8Bytes(metadata);
  if (bytes > METADATA_MAX_BYTES) throw errors.textTooLong('metadata', bytes, METADATA_MAX_BYTES);
  return metadata;
}
