import { sql, type Migration, type RawBuilder } from 'kysely';
import type { Dialect } from '../db.js';

export type MigrationFactory = (dialect: Dialect) => Migration;

/**
 * Ids are KSUID strings whose byte order is creation order. PostgreSQL's default collation
 * would sort them by locale rules (case-insensitively), breaking keyset pagination, so ids
 * use the "C" collation there; SQLite compares bytes already.
 */
export function idType(dialect: Dialect): 'text' | RawBuilder<unknown> {
  return dialect === 'postgres' ? sql`text collate "C"` : 'text';
}
