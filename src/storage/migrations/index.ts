import type { Migration } from 'kysely';
import type { Dialect } from '../db.js';
import { initial } from './001_initial.js';
import { tlsEdges } from './002_tls_edges.js';

/** Every migration in order. Names are permanent: they are recorded in kysely_migration. */
export function allMigrations(dialect: Dialect): Record<string, Migration> {
  return {
    '001_initial': initial(dialect),
    '002_tls_edges': tlsEdges(dialect),
  };
}
