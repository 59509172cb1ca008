import { openPostgres } from './postgres.js';
import { openSqlite } from './sqlite.js';
import type { Store, StoreOptions } from './types.js';

export type { Dialect, QueryListener, Store, StoreOptions } from './types.js';

export function openStore(url: string, options: StoreOptions = {}): Store {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url, options);
  if (url === 'sqlite::memory:') return openSqlite(':memory:');
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
  throw new Error(`Unsupported DATABASE_URL scheme: ${url.split(':')[0]}`);
}
