import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openStore } from '../../src/storage/db.js';
import { SqlCredentialRepository } from '../../src/storage/repositories/credentials.js';
import { generateApiKey } from '../../test/helpers/server-process.js';
import { bulkSeedCredentials } from '../seed.js';
import { compare } from './measure.js';

/**
 * How much of GET /credentials/{id}'s database step is Kysely and how much SQLite:
 *   1. SqlCredentialRepository.get as the server runs it (build, compile, execute through Kysely);
 *   2. the same SELECT compiled once by Kysely at start, executed with new parameters;
 *   3. a better-sqlite3 prepared statement called directly (inside an async function, as a
 *      repository method would be), on its own connection to the same file.
 * And the same for the PATCH's UPDATE … RETURNING.
 *
 *   node --import tsx bench/experiments/query-path.ts
 */
const dir = mkdtempSync(join(tmpdir(), 'burrow-exp-'));
try {
  const url = `sqlite:${join(dir, 'exp.db')}`;
  const seeded = await bulkSeedCredentials(url, generateApiKey(), 1000, 1000, () => {});
  const { accountId, sampleIds: ids } = seeded;
  const store = openStore(url);
  const repository = new SqlCredentialRepository(store);
  const columns = ['id', 'account_id', 'owner_id', 'description', 'metadata', 'acl', 'created_at'] as const;
  const compiledGet = store.db.selectFrom('credentials').select(columns).where('id', '=', '').where('account_id', '=', '').compile();
  const compiledUpdate = store.db
    .updateTable('credentials')
    .set({ description: '' })
    .where('id', '=', '')
    .where('account_id', '=', '')
    .returning(columns)
    .compile();
  const raw = new Database(join(dir, 'exp.db'));
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  const rawGet = raw.prepare(compiledGet.sql);
  const rawUpdate = raw.prepare(compiledUpdate.sql);
  let n = 0;
  const nextId = () => ids[n++ % ids.length]!;

  await compare('SELECT one credential by id and account', [
    { name: '1. repository.get (Kysely builder + compile + execute)', run: () => repository.get(accountId, nextId()) },
    { name: '2. Kysely, query compiled once, executeQuery with new parameters', run: () => store.db.executeQuery({ ...compiledGet, parameters: [nextId(), accountId] }) },
    { name: '3. better-sqlite3 stmt.get in an async function', run: async () => rawGet.get(nextId(), accountId) },
  ]);
  // Updates without the durability wait: only the statement's cost.
  await compare('UPDATE … RETURNING one credential (no fdatasync)', [
    { name: '1. repository-style builder (Kysely updateTable … returning)', run: () => store.db.updateTable('credentials').set({ description: `d${n}` }).where('id', '=', nextId()).where('account_id', '=', accountId).returning(columns).executeTakeFirst() },
    { name: '2. Kysely, compiled once, executeQuery with new parameters', run: () => store.db.executeQuery({ ...compiledUpdate, parameters: [`d${n}`, nextId(), accountId] }) },
    { name: '3. better-sqlite3 stmt.get in an async function', run: async () => rawUpdate.get(`d${n}`, nextId(), accountId) },
  ], 20_000);
  raw.close();
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
