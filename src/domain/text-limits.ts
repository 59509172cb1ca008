import { errors } from './errors.js';

/** SPEC §5.1: limits count UTF-8 bytes, not characters. */
export const DESCRIPTION_MAX_BYTES = 255;
export const METADATA_MAX_BYTES = 4096;

export function checkDescription(description: string): string {
  const bytes = Buffer.byteLength(description, 'utf8');
  if (bytes > DESCRIPTION_MAX_BYTES) throw errors.descriptionTooLong(bytes);
  return description;
}

export function checkMetadata(metadata: string): string {
  const bytes = Buffer.byteLength(metadata, 'utf8');
  if (bytes > METADATA_MAX_BYTES) throw errors.metadataTooLong(bytes);
  return metadata;
}
